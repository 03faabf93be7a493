// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Owns the maps shared by all probe groups: loading this object creates
 * them; every group skeleton then reuses their fds. No programs. */
#include "jackdaw.bpf.h"
#include "net_filter.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";
