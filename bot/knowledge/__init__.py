"""What a server knows beyond one turn: its documents (`search_docs`, the `/docs` service),
`/tldr` of a channel, and a channel's running summary of what left the context window.

Part of bot/: joins memory/ (documents, buffer, summaries) and agent/ (tools, the model);
knows nothing of Discord.
"""
