// SPDX-License-Identifier: GPL-2.0-only
/*
 * Runs the kernel's own irq_create_affinity_masks() (kernel/irq/affinity.c over
 * lib/group_cpus.c and lib/sort.c of one Debian tree, built against kshim.h) on one machine
 * and one request read from stdin, and prints the descriptors as one JSON line. Written for
 * irqscope's tests/data/affinity-eras/gen.sh.
 *
 * Input, one item per line:
 *   nr_cpu_ids N
 *   nr_node_ids M
 *   possible CPULIST
 *   present CPULIST
 *   cpu CPU NODE SIBLINGS CLUSTER     (every possible CPU; "-" for an empty list)
 *   request NVECS PRE POST NSETS [SET...]   (NSETS 0: the default single set)
 * Output:
 *   {"null":false,"descs":[{"mask":"0-7","is_managed":false},...],"warnings":N}
 */
#include "kshim.h"
#include <stdio.h>

unsigned int nr_cpu_ids, nr_node_ids;
unsigned long kshim_warnings;
struct cpumask kshim_possible, kshim_present, kshim_sibling[KSHIM_NR_CPUS], kshim_cluster[KSHIM_NR_CPUS];
int kshim_node[KSHIM_NR_CPUS];
cpumask_var_t irq_default_affinity;

static unsigned int sets[IRQ_AFFINITY_MAX_SETS + 1], nsets;

/* A driver's calc_sets(): the sets the request names. */
static void request_sets(struct irq_affinity *affd, unsigned int affvecs)
{
	(void)affvecs;
	affd->nr_sets = nsets;
	for (unsigned int i = 0; i < nsets && i < IRQ_AFFINITY_MAX_SETS; i++)
		affd->set_size[i] = sets[i];
}

static void die(const char *what)
{
	fprintf(stderr, "harness: %s\n", what);
	exit(2);
}

/* "0-3,8,10-11" or "-" into m. */
static void parse_list(const char *text, struct cpumask *m)
{
	cpumask_clear(m);
	if (strcmp(text, "-") == 0)
		return;
	const char *p = text;
	while (*p) {
		char *end;
		unsigned long a = strtoul(p, &end, 10), b = a;
		if (end == p)
			die("bad cpulist");
		if (*end == '-') {
			p = end + 1;
			b = strtoul(p, &end, 10);
			if (end == p)
				die("bad cpulist range");
		}
		if (b >= KSHIM_NR_CPUS || a > b)
			die("cpulist out of range");
		for (unsigned long c = a; c <= b; c++)
			cpumask_set_cpu((unsigned int)c, m);
		p = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			die("bad cpulist separator");
	}
}

static void print_list(const struct cpumask *m)
{
	bool first = true;
	for (unsigned int c = 0; c < nr_cpu_ids;) {
		if (!kshim_test(m, c)) {
			c++;
			continue;
		}
		unsigned int e = c;
		while (e + 1 < nr_cpu_ids && kshim_test(m, e + 1))
			e++;
		printf(first ? "" : ",");
		if (e == c)
			printf("%u", c);
		else
			printf("%u-%u", c, e);
		first = false;
		c = e + 1;
	}
}

int main(void)
{
	char line[16384], a[8192], b[8192];
	unsigned int nvecs = 0;
	struct irq_affinity affd = { 0 };
	bool have_request = false;

	while (fgets(line, sizeof(line), stdin)) {
		unsigned int cpu, node;
		if (sscanf(line, "nr_cpu_ids %u", &nr_cpu_ids) == 1) {
			if (nr_cpu_ids == 0 || nr_cpu_ids > KSHIM_NR_CPUS)
				die("nr_cpu_ids out of range");
		} else if (sscanf(line, "nr_node_ids %u", &nr_node_ids) == 1) {
			if (nr_node_ids == 0 || nr_node_ids > KSHIM_MAX_NUMNODES)
				die("nr_node_ids out of range");
		} else if (sscanf(line, "possible %8191s", a) == 1) {
			parse_list(a, &kshim_possible);
		} else if (sscanf(line, "present %8191s", a) == 1) {
			parse_list(a, &kshim_present);
		} else if (sscanf(line, "cpu %u %u %8191s %8191s", &cpu, &node, a, b) == 4) {
			if (cpu >= KSHIM_NR_CPUS || node >= KSHIM_MAX_NUMNODES)
				die("cpu line out of range");
			kshim_node[cpu] = (int)node;
			parse_list(a, &kshim_sibling[cpu]);
			parse_list(b, &kshim_cluster[cpu]);
		} else if (strncmp(line, "request ", 8) == 0) {
			int used, off = 8;
			if (sscanf(line + off, "%u %u %u %u%n", &nvecs, &affd.pre_vectors, &affd.post_vectors, &nsets,
				   &used) != 4)
				die("bad request");
			if (nsets > IRQ_AFFINITY_MAX_SETS + 1)
				die("too many sets");
			off += used;
			for (unsigned int i = 0; i < nsets; i++) {
				if (sscanf(line + off, "%u%n", &sets[i], &used) != 1)
					die("bad set size");
				off += used;
			}
			affd.calc_sets = nsets ? request_sets : NULL;
			have_request = true;
		} else if (line[0] != '\n') {
			die("unknown input line");
		}
	}
	if (!have_request || nr_cpu_ids == 0 || nr_node_ids == 0)
		die("incomplete input");
	if (!zalloc_cpumask_var(&irq_default_affinity, GFP_KERNEL))
		die("out of memory");
	cpumask_setall(irq_default_affinity);

	struct irq_affinity_desc *descs = irq_create_affinity_masks(nvecs, &affd);
	if (!descs) {
		printf("{\"null\":true,\"descs\":[],\"warnings\":%lu}\n", kshim_warnings);
		return 0;
	}
	printf("{\"null\":false,\"descs\":[");
	for (unsigned int i = 0; i < nvecs; i++) {
		printf("%s{\"mask\":\"", i ? "," : "");
		print_list(&descs[i].mask);
		printf("\",\"is_managed\":%s}", descs[i].is_managed ? "true" : "false");
	}
	printf("],\"warnings\":%lu}\n", kshim_warnings);
	kfree(descs);
	return 0;
}
