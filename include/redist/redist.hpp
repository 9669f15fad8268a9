// redist/redist.hpp -- the whole library.
#pragma once

#include "redist/core/config.hpp"
#include "redist/core/cost.hpp"
#include "redist/core/dtype.hpp"
#include "redist/core/error.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/offsets.hpp"
#include "redist/core/rules.hpp"
#include "redist/lower/lower.hpp"
#include "redist/lower/synthesize.hpp"
#include "redist/program.hpp"
#include "redist/search/bgl_search.hpp"
#include "redist/search/constexpr_search.hpp"
#include "redist/search/tight_paths.hpp"
#include "redist/search/weak_graph.hpp"
