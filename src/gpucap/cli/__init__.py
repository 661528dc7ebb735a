"""The command-line shell: parse arguments, load files, call the core, render, exit."""
