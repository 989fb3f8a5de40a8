"""diffusion-lsp's language server: LSP in, engine requests out. No torch in here."""

__version__ = "0.1.0"
