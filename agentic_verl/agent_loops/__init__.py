"""Multi-turn agent loops registered with verl, and their tracing (trace.py)."""
