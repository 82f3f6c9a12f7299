"""The Hugging Face Hub client: consented downloads, pushes with model cards, and the release manifest.

The server (``zoo hub serve``) is a package of its own, :mod:`zoo.hub_server`, which nothing here imports.
"""
