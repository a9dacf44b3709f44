// Names used in reports and errors; they match the strings accepted in configs (DESIGN.md A2).
#include "megasim/config/specs.hpp"

#include "megasim/core/error.hpp"

namespace megasim {

const char* to_string(Activation v) {
  switch (v) {
    case Activation::Gelu: return "gelu";
    case Activation::GeluNew: return "gelu_new";
    case Activation::Silu: return "silu";
    case Activation::Relu: return "relu";
    case Activation::SquaredRelu: return "relu2";
  }
  return "?";
}

const char* to_string(Norm v) {
  switch (v) {
    case Norm::LayerNorm: return "layernorm";
    case Norm::RmsNorm: return "rmsnorm";
  }
  return "?";
}

const char* to_string(Precision v) {
  switch (v) {
    case Precision::Bf16: return "bf16";
    case Precision::Fp16: return "fp16";
    case Precision::Fp8: return "fp8";
  }
  return "?";
}

const char* to_string(Fp8Recipe v) {
  switch (v) {
    case Fp8Recipe::Delayed: return "delayed";
    case Fp8Recipe::Tensorwise: return "tensorwise";
    case Fp8Recipe::Mxfp8: return "mxfp8";
    case Fp8Recipe::Blockwise: return "blockwise";
  }
  return "?";
}

const char* to_string(Recompute v) {
  switch (v) {
    case Recompute::None: return "none";
    case Recompute::Selective: return "selective";
    case Recompute::Full: return "full";
  }
  return "?";
}

const char* to_string(Optimizer v) {
  switch (v) {
    case Optimizer::Adam: return "adam";
    case Optimizer::Lamb: return "lamb";
  }
  return "?";
}

const char* to_string(Topology v) {
  switch (v) {
    case Topology::RailOptimizedClos: return "rail-optimized-clos";
    case Topology::FatTree: return "fat-tree";
    case Topology::RailOnly: return "rail-only";
  }
  return "?";
}

const char* to_string(Routing v) {
  switch (v) {
    case Routing::Ecmp: return "ecmp";
    case Routing::IdealSpray: return "ideal-spray";
    case Routing::SinglePath: return "single-path";
  }
  return "?";
}

const char* to_string(PlacementOrder v) {
  switch (v) {
    case PlacementOrder::DpFirst: return "dp-first";
    case PlacementOrder::PpFirst: return "pp-first";
  }
  return "?";
}

const char* to_string(MoeDispatcher v) {
  switch (v) {
    case MoeDispatcher::AllToAll: return "alltoall";
    case MoeDispatcher::AllGather: return "allgather";
    case MoeDispatcher::Flex: return "flex";
  }
  return "?";
}

const char* to_string(FlexBackend v) {
  switch (v) {
    case FlexBackend::DeepEp: return "deepep";
    case FlexBackend::HybridEp: return "hybridep";
  }
  return "?";
}

const char* to_string(TpOverlapScope v) {
  switch (v) {
    case TpOverlapScope::Ffn: return "ffn";
    case TpOverlapScope::AllLinears: return "all-linears";
  }
  return "?";
}

const char* to_string(DpOverlapGranularity v) {
  switch (v) {
    case DpOverlapGranularity::Chunk: return "chunk";
    case DpOverlapGranularity::Bucket: return "bucket";
  }
  return "?";
}

const char* to_string(AttentionKernel v) {
  switch (v) {
    case AttentionKernel::Unfused: return "unfused";
    case AttentionKernel::FlashV1: return "flash-v1";
    case AttentionKernel::FlashV2: return "flash-v2";
    case AttentionKernel::CudnnFused: return "cudnn-fused";
  }
  return "?";
}

const char* to_string(CommInitStore v) {
  switch (v) {
    case CommInitStore::TcpStore: return "tcpstore";
    case CommInitStore::Redis: return "redis";
  }
  return "?";
}

const char* to_string(FsdpStaging v) {
  switch (v) {
    case FsdpStaging::None: return "none";
    case FsdpStaging::Fsdp1: return "fsdp1";
    case FsdpStaging::Fsdp2: return "fsdp2";
  }
  return "?";
}

const char* to_string(OptimizerImpl v) {
  switch (v) {
    case OptimizerImpl::Fused: return "fused";
    case OptimizerImpl::Foreach: return "foreach";
    case OptimizerImpl::ForLoop: return "for-loop";
    case OptimizerImpl::DecoupledAdamw: return "decoupled-adamw";
  }
  return "?";
}

const char* to_string(CrossEntropyImpl v) {
  switch (v) {
    case CrossEntropyImpl::Fused: return "fused";
    case CrossEntropyImpl::Unfused: return "unfused";
    case CrossEntropyImpl::Xentropy: return "xentropy";
    case CrossEntropyImpl::Te: return "te";
  }
  return "?";
}

CommInitStore parse_comm_init_store(const std::string& text, const std::string& path) {
  // The names are to_string's, so the job parser, validate's rows and the output agree.
  for (const CommInitStore v : {CommInitStore::TcpStore, CommInitStore::Redis})
    if (text == to_string(v)) return v;
  throw InputError(path, "unknown value \"" + text + "\"; valid: " + to_string(CommInitStore::TcpStore) + ", " +
                             to_string(CommInitStore::Redis));
}

}  // namespace megasim
