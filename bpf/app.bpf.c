// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* app group: USDT probes named by the user or a schema. One program is
 * attached once per probe; the attach cookie is the probe's index in the
 * trace's app-probe table. */
#include "jackdaw.bpf.h"
#include <bpf/usdt.bpf.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("usdt")
int usdt_probe(struct pt_regs *ctx)
{
	struct jdw_control *ctl = jdw_ctl();
	struct jdw_usdt_record *r;
	void *ring;
	long n, i;

	/* A probe attached by binary fires in every process running it, the
	 * unselected ones included: the process filter applies here too. */
	if (!jdw_group_on(ctl, JDW_GROUP_APP) ||
	    !jdw_tgid_traced(ctl, bpf_get_current_pid_tgid() >> 32))
		return 0;
	if (targ_sample && ctl->sample_keep < JDW_SAMPLE_ALL) {
		__u64 id = bpf_get_current_pid_tgid();
		__u32 tid = (__u32)id;

		if (bpf_map_lookup_elem(&jdw_unsampled, &tid)) {
			jdw_gap_note(id);
			return 0;
		}
	}
	r = jdw_reserve(JDW_GROUP_APP, JDW_EVENT_USDT, sizeof(*r), &ring, JDW_CTX_TASK);
	if (!r)
		return 0;
	r->body.probe_id = bpf_usdt_cookie(ctx);
	n = bpf_usdt_arg_cnt(ctx);
	if (n < 0)
		n = 0;
	if (n > JDW_USDT_MAX_ARGS)
		n = JDW_USDT_MAX_ARGS;
	r->body.nargs = n;
	for (i = 0; i < JDW_USDT_MAX_ARGS; i++) {
		long v = 0;

		if (i < n)
			bpf_usdt_arg(ctx, i, &v);
		r->body.args[i] = v;
	}
	jdw_submit(r, ring, ctl);
	return 0;
}
