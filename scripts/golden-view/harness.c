// SPDX-License-Identifier: GPL-2.0-only
/*
 * harness.c - run the kernel's own group_cpus_evenly() (lib/group_cpus.c, linked from
 * Debian's sources by make-vectors.sh) on a machine given as explicit per-CPU masks.
 *
 * Input (stdin), whitespace-separated:
 *   NR_CPU_IDS NR_NODE_IDS
 *   then one line per CPU id 0 .. NR_CPU_IDS-1:
 *     NODE POSSIBLE PRESENT NSIB SIB... NCLU CLU...
 *   (POSSIBLE, PRESENT: 0 or 1; NSIB CPU ids of topology_sibling_cpumask, NCLU of
 *   topology_cluster_cpumask)
 *   then any number of NUMGRPS values, one call each.
 * Output per call: "call NUMGRPS", then "null" or "nummasks N" followed by one line per group,
 * "GROUP CPU...", and "warnings W" (WARN_ON hits in the call).
 *
 * Built with -DKC_GCE_NUMGRPS_ONLY for a group_cpus_evenly(numgrps) without nummasks (6.12):
 * nummasks is then the index of the last non-empty group plus one, which is what the later
 * kernel returns (min(nr_present + nr_others, numgrps): both passes fill groups one after the
 * other from group 0 and give each group they count a CPU).
 */
#include <kc.h>
#include <stdio.h>

unsigned long kc_warnings;
unsigned int nr_cpu_ids;
unsigned int nr_node_ids;
struct cpumask kc_possible, kc_present;
int kc_cpu_node[KC_NR_CPUS];
struct cpumask *kc_sibling[KC_NR_CPUS];
struct cpumask *kc_cluster[KC_NR_CPUS];
nodemask_t kc_node_possible;

static unsigned int read_u(const char *what)
{
	unsigned int v;

	if (scanf("%u", &v) != 1) {
		fprintf(stderr, "harness: expected %s\n", what);
		exit(2);
	}
	return v;
}

static void read_mask(struct cpumask *m)
{
	unsigned int n = read_u("a mask size");

	while (n--) {
		unsigned int cpu = read_u("a CPU id");

		if (cpu >= nr_cpu_ids) {
			fprintf(stderr, "harness: CPU %u out of range\n", cpu);
			exit(2);
		}
		cpumask_set_cpu(cpu, m);
	}
}

int main(void)
{
	unsigned int numgrps;

	nr_cpu_ids = read_u("nr_cpu_ids");
	nr_node_ids = read_u("nr_node_ids");
	if (nr_cpu_ids == 0 || nr_cpu_ids > KC_NR_CPUS || nr_node_ids == 0 || nr_node_ids > KC_MAX_NUMNODES) {
		fprintf(stderr, "harness: sizes out of range\n");
		return 2;
	}
	for (unsigned int n = 0; n < nr_node_ids; n++)
		node_set(n, kc_node_possible);
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		kc_cpu_node[cpu] = (int)read_u("a node");
		if (read_u("possible"))
			cpumask_set_cpu(cpu, &kc_possible);
		if (read_u("present"))
			cpumask_set_cpu(cpu, &kc_present);
		kc_sibling[cpu] = calloc(1, sizeof(struct cpumask));
		kc_cluster[cpu] = calloc(1, sizeof(struct cpumask));
		read_mask(kc_sibling[cpu]);
		read_mask(kc_cluster[cpu]);
	}
	while (scanf("%u", &numgrps) == 1) {
		unsigned int nummasks = 0;
		struct cpumask *masks;

		kc_warnings = 0;
#ifdef KC_GCE_NUMGRPS_ONLY
		masks = group_cpus_evenly(numgrps);
		if (masks) {
			nummasks = numgrps;
			while (nummasks > 0 && cpumask_empty(&masks[nummasks - 1]))
				nummasks--;
		}
#else
		masks = group_cpus_evenly(numgrps, &nummasks);
#endif
		printf("call %u\n", numgrps);
		if (!masks) {
			printf("null\n");
		} else {
			printf("nummasks %u\n", nummasks);
			for (unsigned int g = 0; g < numgrps; g++) {
				unsigned int cpu;

				printf("%u", g);
				for_each_cpu(cpu, &masks[g])
					printf(" %u", cpu);
				printf("\n");
			}
			kfree(masks);
		}
		printf("warnings %lu\n", kc_warnings);
	}
	return 0;
}
