"""Local-first discovery and safe inspection of runs and model files.

Nothing here executes a pickle: torch zip archives are read through their
central directory, and their ``data.pkl`` through an opcode scan plus a
restricted unpickler that only builds tensor *descriptions*.
"""
