"""LLM backends (OpenAI, Ollama, embedded llama.cpp), record/replay, and per-task sessions."""
