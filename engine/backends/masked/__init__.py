"""The masked-LM backend family: the embedded model and any native masked LM (its denoising loop and KV cache)."""
