// redist/redist.hpp -- the whole library (JSON in/out is separate:
// redist/program_json.hpp needs nlohmann-json).
#pragma once

#include "redist/core/config.hpp"
#include "redist/core/cost.hpp"
#include "redist/core/dtensor.hpp"
#include "redist/core/dtype.hpp"
#include "redist/core/error.hpp"
#include "redist/core/jax.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/offsets.hpp"
#include "redist/core/rules.hpp"
#include "redist/format.hpp"
#include "redist/lower/lower.hpp"
#include "redist/lower/synthesize.hpp"
#include "redist/program.hpp"
#include "redist/runtime/backend.hpp"
#include "redist/runtime/darray.hpp"
#include "redist/runtime/executor.hpp"
#include "redist/runtime/pack.hpp"
#include "redist/backends/host.hpp"
#include "redist/backends/mpi.hpp"   // empty unless REDIST_WITH_MPI
#include "redist/backends/nccl.hpp"  // empty unless REDIST_WITH_NCCL
#include "redist/search/bgl_search.hpp"
#include "redist/search/constexpr_search.hpp"
#include "redist/search/tight_paths.hpp"
#include "redist/search/weak_graph.hpp"
#include "redist/static/collectives.hpp"
#include "redist/static/darray.hpp"
#include "redist/static/dtype.hpp"
#include "redist/static/mesh.hpp"
#include "redist/static/plan.hpp"
#include "redist/static/redistribute.hpp"
