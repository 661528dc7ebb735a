"""Runtime basics shared by the shell layers: the injected Clock and logging."""
