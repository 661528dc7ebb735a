"""Start-up (issue 12): the CLI module loads only what parsing the command line needs, so that
`gpucap --version`, `gpucap --help` and a usage error do not pay for pydantic, numpy, the
scheduler or the simulator; each command's module (imported when that command runs) imports what
it uses. Checked by module, never by a timer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gpucap.cli import main as cli_main
from gpucap.cli.app import COMMANDS

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: tomllib is tomli, added to the standard library in 3.11
    import tomli as tomllib

HEAVY = (
    "numpy",
    "pydantic",
    "rich",
    "yaml",
    "gpucap.apis.serde",
    "gpucap.apis.core",
    "gpucap.scheduling",
    "gpucap.controllers",
    "gpucap.cloudprovider",
    "gpucap.sim",
    "gpucap.lint",
    "gpucap.cli.demo",
    "gpucap.cli.simulate",
)


def loaded_after(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint('\\n'.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def test_importing_the_cli_loads_none_of_the_heavy_modules() -> None:
    assert _heavy(loaded_after("import gpucap.cli.main")) == []


def test_version_prints_without_loading_the_models() -> None:
    code = (
        "import sys\nsys.argv = ['gpucap', '--version']\nfrom gpucap.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )
    loaded = loaded_after(code)
    assert "gpucap.apis.core" not in loaded
    assert "numpy" not in loaded


def _heavy(loaded: set[str]) -> list[str]:
    return sorted(m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY))


def _run(argv: list[str]) -> str:
    return (
        f"import sys\nsys.argv = ['gpucap', *{argv!r}]\nfrom gpucap.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )


def test_the_root_help_lists_the_commands_without_importing_them() -> None:
    loaded = loaded_after(_run(["--help"]))
    assert _heavy(loaded) == []
    assert not any(c.target.partition(":")[0] in loaded for c in COMMANDS.values())


def test_a_usage_error_imports_no_command() -> None:
    # typer itself loads pydantic to parse options; gpucap's models and commands stay out.
    loaded = loaded_after(_run(["valdate"]))
    assert [m for m in _heavy(loaded) if m.startswith("gpucap") or m == "numpy"] == []
    assert not any(c.target.partition(":")[0] in loaded for c in COMMANDS.values())


def test_validate_loads_neither_the_catalog_nor_the_scheduler_nor_the_simulator() -> None:
    workshop = Path(cli_main.__file__).parents[1] / "data" / "examples" / "workshop"
    loaded = loaded_after(_run(["validate", str(workshop)]))
    assert "gpucap.cli.validate" in loaded
    for module in (
        "numpy",
        "gpucap.cloudprovider.aws.instancetype.catalog",
        "gpucap.sim",
        "gpucap.cli.plan",
    ):
        assert module not in loaded


def test_render_without_pin_ami_does_not_load_the_ami_lookups() -> None:
    loaded = loaded_after(_run(["render", "--help"]))
    assert "gpucap.cli.render_cmd" in loaded
    assert "gpucap.cloudprovider.aws.amifamily.ami" not in loaded


def test_demo_values_are_still_exported_by_the_cli_module() -> None:
    from gpucap.cli.demo import DEMO_VALUES  # noqa: PLC0415

    assert cli_main.DEMO_VALUES is DEMO_VALUES


def test_the_installed_script_is_console_which_exits_as_main_and_leaves_its_objects_frozen() -> (
    None
):
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert pyproject["project"]["scripts"]["gpucap"] == "gpucap.cli.main:console"
    # In a child: freezing is for the end of a process, not for this test run's collector.
    code = (
        "import gc, sys\nsys.argv = ['gpucap', 'plan']\nfrom gpucap.cli.main import console\n"
        "try:\n    console()\nexcept SystemExit as e:\n"
        "    print('exit', e.code, 'frozen', gc.get_freeze_count() > 0, 'on', gc.isenabled())"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["exit", "2", "frozen", "True", "on", "True"]
    assert done.stderr.startswith("error: ")


def test_plan_gives_the_collector_back_as_it_found_it() -> None:
    workshop = Path(cli_main.__file__).parents[1] / "data" / "examples" / "workshop"
    code = (
        "import gc, sys\nfrom gpucap.cli.main import main\n"
        f"sys.argv = ['gpucap', 'plan', {str(workshop)!r}, '-o', 'json']\n"
        "for on in (True, False):\n"
        "    (gc.enable if on else gc.disable)()\n"
        "    try:\n        main()\n    except SystemExit as e:\n"
        "        print('exit', e.code, 'on', gc.isenabled(), 'frozen', gc.get_freeze_count(),"
        " file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    said = [line for line in done.stderr.splitlines() if line.startswith("exit")]
    assert said == ["exit 0 on True frozen 0", "exit 0 on False frozen 0"]
