"""Run under a Python where vLLM 0.32 imports (tests/test_vllm.py passes the bodies its fake server received on
stdin, as JSON ``[{"body": ..., "answer": ...}]``). Checks, with vLLM's own code:

1. the vendored ``diffusion.py`` is vLLM's ``vllm/utils/diffusion.py`` (but for its one import);
2. every body parses as vLLM's ``CompletionRequest`` with no field it would drop, becomes the intended
   ``SamplingParams`` (``extra_args`` = our ``vllm_xargs``, one whole canvas, log-probabilities) and passes
   ``validate_diffusion_sampling_params`` for the tiny checkpoint's canvas (48) and vocabulary (512);
3. every answer the fake gave parses as vLLM's ``CompletionResponse``;
4. vLLM's own ``_compiled_sample_step`` (run eagerly on CPU) holds pinned positions at the seed while denoising
   and emits the argmax canvas, the model's argmax at pinned positions included: what the fake does.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

import vllm.utils.diffusion as real_diffusion
from vllm.entrypoints.openai.completion.protocol import CompletionRequest, CompletionResponse
from vllm.model_executor.models import diffusion_gemma
from vllm.sampling_params import RequestOutputKind
from vllm.utils.diffusion import validate_diffusion_sampling_params

HERE = Path(__file__).parent


def check_vendored() -> None:
    ours = (HERE / "diffusion.py").read_text().splitlines()
    theirs = Path(real_diffusion.__file__).read_text().splitlines()
    diff = [(a, b) for a, b in zip(ours, theirs) if a != b]
    assert len(ours) == len(theirs) and len(diff) == 1 and "VLLMValidationError" in diff[0][0], diff


def check_body(body: dict) -> None:
    request = CompletionRequest.model_validate(body)
    assert not request.model_extra, f"fields vLLM would drop: {request.model_extra}"
    params = request.to_sampling_params(body["max_tokens"], {})
    validate_diffusion_sampling_params(params, canvas_length=48, vocab_size=512)
    xargs = body["vllm_xargs"]
    assert params.extra_args == xargs
    assert params.max_tokens == xargs["diffusion_canvas_length"] == len(xargs["diffusion_seed_canvas"])
    assert params.ignore_eos and params.logprobs == 0 and params.output_kind == RequestOutputKind.FINAL_ONLY
    assert request.return_token_ids and request.prompt == body["prompt"]


def check_sample_step() -> None:
    step = diffusion_gemma._compiled_sample_step._torchdynamo_orig_callable
    W, V, H, ST = 6, 16, 4, 2
    seed = torch.tensor([[3, 4, 5, 9, 10, 11]])
    pin = torch.tensor([[False, False, False, True, True, True]])
    canvas, argmax_canvas = seed.clone(), torch.zeros(1, W, dtype=torch.long)
    steps, encoder = torch.zeros(1, dtype=torch.int32), torch.zeros(1, dtype=torch.bool)
    confident, sc = torch.zeros(1, dtype=torch.bool), torch.zeros(1, W, H)
    hist, hist_len = torch.zeros(1, ST, W, dtype=torch.long), torch.zeros(1, dtype=torch.int32)
    cap = torch.full((1,), 12, dtype=torch.int32)
    target = torch.tensor([7, 7, 1, 0, 0, 0])   # the model's argmax: it disagrees with the pins
    logits = torch.full((W, V), -10.0)
    logits[torch.arange(W), target] = 10.0
    probs = logits.softmax(-1)
    entropy = -(probs * probs.clamp_min(1e-30).log()).sum(-1)
    emitted = None
    for k in range(3):   # denoise, denoise (converges: stable and confident), commit (emits)
        sampled, num = torch.zeros(1, W, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
        step(target[None], target[None], entropy[None], probs[None], torch.tensor([0]), torch.tensor([0]),
             torch.tensor([0]), torch.tensor([W]), canvas, argmax_canvas, steps, encoder, confident, sc,
             torch.zeros(V, H), torch.tensor(1.0), hist, hist_len, cap, pin, seed,
             torch.zeros(1, dtype=torch.bool), sampled, num, torch.zeros(1, W, dtype=torch.long),
             confidence_threshold=0.005, vocab_size=V, CL=W, ST=ST, entropy_bound=0.2,
             sc_vocab_start=0, sc_vocab_end=V, tp_size=1, tp_group_name="", compute_sc=True)
        if k == 0:
            assert canvas[0, 3:].tolist() == [9, 10, 11], "pinned positions hold their seed while denoising"
        if int(num[0]):
            emitted = sampled[0].tolist()
    assert emitted == target.tolist(), f"the argmax canvas is emitted, pins included: {emitted}"


def main() -> None:
    records = json.load(sys.stdin)
    check_vendored()
    for r in records:
        check_body(r["body"])
        CompletionResponse.model_validate(r["answer"])
    check_sample_step()
    print(f"checked {len(records)} bodies and answers with vLLM's own code; the sample step holds pins")


if __name__ == "__main__":
    main()
