"""The team server: one model denoising canvases for many editors' language servers (``engine.backends.remote``
is its client). ``service`` is the framework-free core, ``app`` the HTTP protocol, ``ray_app`` the Ray Serve
deployment, ``__main__`` the ``diffusion-lsp serve`` command."""
