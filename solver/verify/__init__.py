"""The independent verifier: MODEL.md read on its own. Its modules import one another and models/ only (tests/test_architecture.py)."""
