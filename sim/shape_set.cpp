#include "sim/shape_set.hpp"

namespace commbound::sim {

void ShapeSet::add(const Program& program) {
  for (const Op& op : program.ops) add(op.kernel);
}

void ShapeSet::add(const KernelShape& shape) {
  if (const auto* g = std::get_if<GemmShape>(&shape)) gemms_.insert(*g);
  if (const auto* a = std::get_if<AttentionShape>(&shape)) attentions_.insert(*a);
  if (const auto* m = std::get_if<MemoryBoundShape>(&shape)) memory_bounds_.insert(*m);
}

void ShapeSet::write(std::ostream& out, const std::vector<std::string>& comments) const {
  for (const auto& c : comments) out << "# " << c << "\n";
  for (const GemmShape& g : gemms_) {
    out << "\n[[gemm]]\nm = " << g.m << "\nn = " << g.n << "\nk = " << g.k << "\nlayout = \"" << to_string(g.layout)
        << "\"\n";
  }
  for (const AttentionShape& a : attentions_) {
    out << "\n[[attention]]\ndirection = \"" << to_string(a.direction) << "\"\nbatch = " << a.batch
        << "\nheads = " << a.heads << "\nkv_heads = " << a.kv_heads << "\nseq = " << a.seq << "\nhead_dim = " << a.head_dim
        << "\ncausal = " << (a.causal ? "true" : "false") << "\n";
  }
  for (const MemoryBoundShape& m : memory_bounds_) {
    out << "\n[[memory_bound]]\nop = \"" << m.op << "\"\ntokens = " << m.tokens << "\nwidth = " << m.width << "\n";
  }
}

}  // namespace commbound::sim
