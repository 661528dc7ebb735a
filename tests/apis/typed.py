"""Loading one document through the typed path, shared by the fast-path tests (not a test
module)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from gpucap.apis.limits import Budget
from gpucap.apis.yamltext import NOT_JSON, documents, json_document


def typed(value: Any) -> Any:
    """`value` with every scalar tagged by its type (1, 1.0 and True compare apart)."""
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    return (type(value).__name__, value)


def by_yaml(text: str) -> Any:
    docs = list(documents(text, "x.json", Budget()))
    assert len(docs) == 1
    return docs[0][0]


def agrees(text: str) -> bool:
    """True when the fast path read `text`; fails if it read it otherwise than YAML."""
    fast = json_document(text)
    if fast is NOT_JSON:
        return False
    assert typed(fast) == typed(by_yaml(text)), text
    return True


scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(["$X", "100m", "1Gi", "true", "null", "1e3", "0x1F", "~", "<<", "= ", "a: b"])
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
