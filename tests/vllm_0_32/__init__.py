"""vLLM 0.32's contract for DiffusionGemma, taken from its source (Apache-2.0): the request and response JSON
schemas (``CompletionRequest.model_json_schema()``, ``CompletionResponse.model_json_schema()``) and a verbatim copy
of ``vllm/utils/diffusion.py`` (its one import pointed here). ``check_real.py`` holds them against an installed
vLLM when one is available (``DIFFUSION_LSP_VLLM_PYTHON``)."""
