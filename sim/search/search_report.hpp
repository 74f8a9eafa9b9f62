// SearchReport: what `commbound search` prints: the top layouts (table) and why the others lost,
// or every candidate with its verdict (CSV, JSON).
#pragma once

#include "sim/report/format.hpp"
#include "sim/search/layout_search.hpp"

#include <ostream>
#include <string>

namespace commbound::sim {

struct SearchReportOptions {
  Format format = Format::table;  // table | csv | json
  std::string title;             // the first line (table), "title" (JSON)
  Objective objective = Objective::tokens_per_s;
  int top = 10;                  // rows of the table
};

// Table: the `top` best simulated layouts (layout, tokens/s/GPU, MFU, exposed communication,
// memory/GPU, W/GPU, tokens/J), then the candidates' count by verdict and why the others lost
// (against the best: exposed communication, pipeline bubble, compute; pruned by bound; out of
// memory with the worst; invalid with the commonest reason). CSV and JSON: every candidate, ranked
// ones first, with its verdict, metrics (simulated), bound (fits) and reason.
void write_search(std::ostream& out, const SearchResult& result, const SearchReportOptions& options);

}  // namespace commbound::sim
