"""fedbench's version: a leaf, so that the modules that write it into records import no more
than this (fedbench/__init__.py re-exports it as fedbench.__version__)."""

__version__ = "0.1.0"
