"""Code actions: registered by issue 6."""

def register(server) -> None:
    pass
