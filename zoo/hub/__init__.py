"""Hugging Face Hub layer: consented downloads, pushes with model cards, and a compatible server."""
