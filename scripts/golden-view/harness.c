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
 *
 * The kernel headers the two files include are shim/linux/*.h, each only
 * kernel-c/include/irqscope_kc.h: the same stand-ins `irqscope kernel-c` builds with.
 */
#include <irqscope_kc.h>
#include <stdio.h>

/* The tables kernel-c/include/irqscope_kc.h reads (the stand-ins kernel-c/harness.c uses too). */
unsigned int nr_cpu_ids;
unsigned int nr_node_ids;
struct cpumask irqscope_kc_possible, irqscope_kc_present;
int irqscope_kc_cpu_to_node[NR_CPUS];
struct cpumask *irqscope_kc_sibling[NR_CPUS];
struct cpumask *irqscope_kc_cluster[NR_CPUS];
nodemask_t irqscope_kc_node_possible;

/* lib/group_cpus.c, compiled beside this file: 6.12's form has no nummasks out-parameter. */
#ifdef KC_GCE_NUMGRPS_ONLY
struct cpumask *group_cpus_evenly(unsigned int numgrps);
#else
struct cpumask *group_cpus_evenly(unsigned int numgrps, unsigned int *nummasks);
#endif

/* WARN_ON hits in the current call, each firing counted. */
static unsigned long kc_warnings;

void irqscope_kc_warn(const char *file, int line, const char *cond)
{
	(void)file;
	(void)line;
	(void)cond;
	kc_warnings++;
}

void irqscope_kc_bug(const char *file, int line, const char *cond)
{
	fprintf(stderr, "harness: BUG at %s:%d: %s\n", file, line, cond);
	exit(3);
}

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
	if (nr_cpu_ids == 0 || nr_cpu_ids > NR_CPUS || nr_node_ids == 0 || nr_node_ids > MAX_NUMNODES) {
		fprintf(stderr, "harness: sizes out of range\n");
		return 2;
	}
	for (unsigned int n = 0; n < nr_node_ids; n++)
		node_set(n, irqscope_kc_node_possible);
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		irqscope_kc_cpu_to_node[cpu] = (int)read_u("a node");
		if (read_u("possible"))
			cpumask_set_cpu(cpu, &irqscope_kc_possible);
		if (read_u("present"))
			cpumask_set_cpu(cpu, &irqscope_kc_present);
		irqscope_kc_sibling[cpu] = calloc(1, sizeof(struct cpumask));
		irqscope_kc_cluster[cpu] = calloc(1, sizeof(struct cpumask));
		read_mask(irqscope_kc_sibling[cpu]);
		read_mask(irqscope_kc_cluster[cpu]);
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
