"""tether: a Python runtime for coding agents, built around a tool-calling subsystem treated as infrastructure."""

__version__ = "0.1.0"
