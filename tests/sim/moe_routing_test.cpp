#include "sim/workload/moe_routing.hpp"
