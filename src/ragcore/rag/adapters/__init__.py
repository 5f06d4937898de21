"""Adapters of Collection to LangChain (``adapters.langchain``, extra ``langchain``) and
LlamaIndex (``adapters.llamaindex``, extra ``llamaindex``); import the one you use."""
