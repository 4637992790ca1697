#include "config.h"
#include "topo.h"
