"""The simulated world: gpucap simulate (issue 10)."""
