"""A model on a team server (``engine.team``, e.g. a Ray Serve deployment), reached over HTTP(S): only canvases travel."""
