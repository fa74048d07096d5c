"""Fuzzing harness: seed frames from captured client traffic, cheap mutations,
and a live-server driver. Used by the test suite (hypothesis + a live run of
100,000+ frames) and by `fuzz/atheris_frames.py` for long runs."""
