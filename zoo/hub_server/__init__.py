"""``zoo hub serve``: a Hugging Face Hub compatible HTTP server, with its web pages (:mod:`zoo.hub_server.server`).

A product of its own beside the client (:mod:`zoo.hub`, which a library user loads): its web dependencies
(starlette, uvicorn, the Markdown renderer and sanitizer) come with the ``server`` extra. It may use the
client's small pure helpers (:mod:`zoo.hub.card_header`); the client never imports it.
"""
