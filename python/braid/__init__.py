"""braid's thin Python command line: runs the C++ tools, reads their JSON, draws plots."""

__version__ = "0.1.0"
