// Free-form pipeline layouts: which decoder layers each virtual pipeline stage holds, written as
// Megatron-Core's --pipeline-model-parallel-layout string ([parallel] pp_layout).
//
// Why: an even split (pp x virtual_stages dividing the layers) cannot write the pipelines that the
// largest public runs used: Llama 3 405B's 126 layers over 16 interleaved stages with one layer
// fewer on the first and the last, DeepSeek-V3's 61 layers with its dense layers and MTP placed by
// hand. The layout names each virtual stage's layers, so a lighter first or last stage, an empty
// stage or chunks of unequal size are one string.
#pragma once

#include "core/expected.hpp"

#include <string_view>
#include <vector>

namespace commbound::sim {

struct PipelineLayout {
  std::vector<int> layers;  // decoder layers of each virtual stage, in order (chunk x pp + stage)
  int chunks = 1;           // model chunks per pipeline stage: layers.size() / pp
};

// Reads a layout (Megatron-Core's docs, "Custom Pipeline Model Parallel Layout"): virtual stages
// split by '|', all pp stages of chunk 0 first, then those of chunk 1, and so on; in a stage 'E'
// is the embedding, 't' a decoder layer, 'm' a multi-token prediction module, 'L' the loss; `x*N`
// repeats a symbol and `(...)*N` a group; commas and spaces are only for the eye; a stage may be
// empty. Checked: a multiple of pp stages; 'E' once, in the first; 'L' once, in the last; as many
// 't' as the model's `layers`; its `mtp_layers` modules all in the last virtual stage (commbound
// runs them after the loss head there). The error is a reason, for the caller to place.
Expected<PipelineLayout> parse_pp_layout(std::string_view text, int pp, int layers, int mtp_layers);

}  // namespace commbound::sim
