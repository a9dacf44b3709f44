#pragma once
// Training FLOPs, counted with Megatron-Core's convention (reference/formulas.md):
//   F = 12·B·s·L·h²·[(1 + g/a + s_att/h)·(q/h) + (f/h)·γ + V/(2·L·h)]
// Forward+backward = 3x forward; causal attention is counted over the full s×s score matrix (not
// halved), which is what published Megatron/NeMo MFU tables do. Generalisation: with a sliding
// window w the score/context term uses s_att = min(w, s) instead of s (the span actually
// attended). V is the vocabulary as written in the ModelSpec (not padded), so 175B with V=64000,
// s=2048 gives 1.0774e12 FLOPs per token, the figure MegaScale's Megatron-LM MFU implies.
#include "megasim/config/specs.hpp"

namespace megasim {

// Model FLOPs (no recomputation) for one token of one sequence, forward + backward.
double model_flops_per_token(const JobSpec& job);
// Model FLOPs per optimizer step: global_batch_size · seq_length · model_flops_per_token.
double model_flops_per_step(const JobSpec& job);
// Hardware FLOPs per step: model FLOPs plus recomputation. Selective recompute uses
// Korthikanti's published convention (score term doubled: 1 + s/3h); full recompute
// repeats the whole transformer-layer forward (+1/3 of the layer FLOPs; the LM head is not
// recomputed).
double hardware_flops_per_step(const JobSpec& job);

}  // namespace megasim
