"""A release's framework-free forms: ``agent.pt``, ``model.safetensors`` + ``config.json``, ``policy.onnx``.

:mod:`zoo.release.forms` writes and proves them (``zoo push``); :mod:`zoo.release.config` reads the
safetensors form back (``zoo eval`` / ``zoo enjoy`` of a release), with :mod:`zoo.release.graph` as the
description of the computation and :mod:`zoo.release.agent` as the Open RL Leaderboard's protocol.
docs/release-format.md is the user's side of it.
"""
