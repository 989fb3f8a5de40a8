"""A model on a team server (``engine.team``, e.g. on Ray Serve), reached over HTTP(S): only canvases travel."""
