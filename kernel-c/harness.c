// SPDX-License-Identifier: GPL-2.0-only
/*
 * harness.c - runs one build of lib/group_cpus.c for irqscope, as a separate process.
 *
 * The kernel file is compiled into this translation unit (#include KC_SOURCE) so that its
 * file-static rotation counter, when it has one (KC_COUNTER names it), can be set before and
 * read after every call: the counter is an input and an output, like `--counter`.
 *
 * Line protocol on stdin/stdout (one process answers many calls; irqscope's runner is the
 * only client):
 *
 *   in:  topo NR_CPU_IDS NR_NODE_IDS        a new machine (the lines below up to "end")
 *        node N0 N1 ...                     cpu_to_node() of every CPU id (-1: not possible)
 *        present CPULIST
 *        smt CPUS MASK                      topology_sibling_cpumask() of each CPU in
 *                                           CPUS is MASK (both cpulists; repeated);
 *                                           "smt MASK": CPUS is MASK
 *        cluster CPUS MASK                  topology_cluster_cpumask() likewise (a CPU
 *                                           named in no line has an empty mask)
 *        end
 *        call NUMGRPS COUNTER               group_cpus_evenly(NUMGRPS) with the counter set
 *        time NUMGRPS COUNTER ITERS         the same call 5 times untimed, then ITERS times,
 *                                           each timed alone (the call and the caller's
 *                                           kfree(), CLOCK_MONOTONIC), the counter set before
 *                                           each
 *   out: ok                                 after "end"
 *        null COUNTER_AFTER NWARN           the call returned NULL
 *        masks NUMMASKS COUNTER_AFTER NWARN NUMGRPS, then NUMGRPS lines "m CPULIST"
 *        warn LINE TEXT                     NWARN lines (after either answer)
 *        time ITERS MEDIAN_NS MIN_NS MAX_NS  after "time": nanoseconds per call
 *        error TEXT                         a line irqscope could not read
 *
 * Limits: the runner passes the address-space limit (MiB) and the CPU-time limit (s) as
 * arguments; they are set before the first call, so a call that loops or allocates without
 * end is ended by the kernel of the machine running irqscope, not by irqscope's server.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <irqscope_kc.h>

#include KC_SOURCE

unsigned int nr_cpu_ids = 1;
unsigned int nr_node_ids = 1;
struct cpumask irqscope_kc_possible, irqscope_kc_present;
int irqscope_kc_cpu_to_node[NR_CPUS];
struct cpumask *irqscope_kc_sibling[NR_CPUS];
struct cpumask *irqscope_kc_cluster[NR_CPUS];
nodemask_t irqscope_kc_node_possible;

/* Masks the topology tables point at: one per distinct sibling or cluster mask, one empty. */
static struct cpumask kc_empty;
/* The machine's distinct sibling and cluster masks, each allocated as its line is read. */
static struct cpumask **kc_sets;
static unsigned int kc_nsets;

#define KC_WARNINGS_MAX 64
#define KC_NUMGRPS_MAX 65536
#define KC_TIME_ITERS_MAX 1000000
#define KC_TIME_WARMUP 5
static struct { const char *file; int line; const char *cond; } kc_warn[KC_WARNINGS_MAX];
static unsigned int kc_nwarn, kc_nwarn_dropped;

void irqscope_kc_warn(const char *file, int line, const char *cond)
{
	unsigned int i;

	(void)file;
	/* WARN_ON_ONCE: one report per site and call. */
	for (i = 0; i < kc_nwarn; i++)
		if (kc_warn[i].line == line && kc_warn[i].cond == cond)
			return;
	if (kc_nwarn == KC_WARNINGS_MAX) {
		kc_nwarn_dropped++;
		return;
	}
	kc_warn[kc_nwarn].file = file;
	kc_warn[kc_nwarn].line = line;
	kc_warn[kc_nwarn].cond = cond;
	kc_nwarn++;
}

void irqscope_kc_bug(const char *file, int line, const char *cond)
{
	printf("bug %s:%d %s\n", file, line, cond);
	fflush(stdout);
	_exit(3);
}

static void kc_fail(const char *what)
{
	printf("error %s\n", what);
	fflush(stdout);
	exit(2);
}

/* Parse a kernel cpulist ("0-3,8,10-11"; "" is empty) into m, every id below nr_cpu_ids. */
static void kc_parse_cpulist(const char *s, struct cpumask *m)
{
	memset(m, 0, sizeof(*m));
	while (*s && *s != '\n') {
		char *end;
		unsigned long a = strtoul(s, &end, 10), b = a, cpu;

		if (end == s)
			kc_fail("bad cpulist");
		s = end;
		if (*s == '-') {
			b = strtoul(s + 1, &end, 10);
			if (end == s + 1)
				kc_fail("bad cpulist");
			s = end;
		}
		if (a > b || b >= nr_cpu_ids)
			kc_fail("cpulist outside nr_cpu_ids");
		for (cpu = a; cpu <= b; cpu++)
			set_bit(cpu, m->bits);
		if (*s == ',')
			s++;
	}
}

static void kc_print_cpulist(const struct cpumask *m)
{
	unsigned int cpu = find_first_bit(m->bits, nr_cpu_ids);
	bool first = true;

	fputs("m ", stdout);
	while (cpu < nr_cpu_ids) {
		unsigned int end = cpu;

		while (end + 1 < nr_cpu_ids && test_bit(end + 1, m->bits))
			end++;
		printf(end == cpu ? "%s%u" : "%s%u-%u", first ? "" : ",", cpu, end);
		first = false;
		cpu = find_next_bit(m->bits, nr_cpu_ids, end + 1);
	}
	putchar('\n');
}

static void kc_set_limits(int argc, char **argv)
{
	struct rlimit r;

	if (argc > 1) {
		r.rlim_cur = r.rlim_max = (rlim_t)strtoul(argv[1], NULL, 10) << 20;
		setrlimit(RLIMIT_AS, &r);
	}
	if (argc > 2) {
		r.rlim_cur = r.rlim_max = (rlim_t)strtoul(argv[2], NULL, 10);
		setrlimit(RLIMIT_CPU, &r);
	}
	r.rlim_cur = r.rlim_max = 0;
	setrlimit(RLIMIT_CORE, &r);
}

static void kc_read_topology(char *line, size_t cap, FILE *in)
{
	unsigned long ncpu, nnode;
	unsigned int cpu;

	if (sscanf(line, "topo %lu %lu", &ncpu, &nnode) != 2 || !ncpu || ncpu > NR_CPUS ||
	    !nnode || nnode > MAX_NUMNODES)
		kc_fail("bad topo line");
	nr_cpu_ids = ncpu;
	nr_node_ids = nnode;
	while (kc_nsets)
		free(kc_sets[--kc_nsets]);
	free(kc_sets);
	kc_sets = calloc(2 * ncpu, sizeof(*kc_sets));
	if (!kc_sets)
		kc_fail("out of memory");
	kc_nsets = 0;
	memset(&irqscope_kc_possible, 0, sizeof(irqscope_kc_possible));
	memset(&irqscope_kc_present, 0, sizeof(irqscope_kc_present));
	memset(&irqscope_kc_node_possible, 0, sizeof(irqscope_kc_node_possible));
	for (cpu = 0; cpu < nnode; cpu++)
		set_bit(cpu, irqscope_kc_node_possible.bits);
	for (cpu = 0; cpu < NR_CPUS; cpu++) {
		irqscope_kc_cpu_to_node[cpu] = 0;
		irqscope_kc_sibling[cpu] = &kc_empty;
		irqscope_kc_cluster[cpu] = &kc_empty;
	}
	(void)cap;
	for (;;) {
		char *p;

		if (!fgets(line, (int)cap, in))
			kc_fail("topology ends early");
		if (!strchr(line, '\n'))
			kc_fail("topology line too long");
		if (!strncmp(line, "end", 3))
			break;
		if (!strncmp(line, "node ", 5)) {
			p = line + 5;
			for (cpu = 0; cpu < nr_cpu_ids; cpu++) {
				char *end;
				long n = strtol(p, &end, 10);

				if (end == p || n < -1 || n >= (long)nr_node_ids)
					kc_fail("bad node line");
				p = end;
				if (n >= 0) {
					set_bit(cpu, irqscope_kc_possible.bits);
					irqscope_kc_cpu_to_node[cpu] = (int)n;
				}
			}
		} else if (!strncmp(line, "present ", 8)) {
			kc_parse_cpulist(line + 8, &irqscope_kc_present);
		} else if (!strncmp(line, "smt ", 4) || !strncmp(line, "cluster ", 8)) {
			bool smt = line[0] == 's';
			struct cpumask who, *cpus, *m, *first;
			char *list = line + (smt ? 4 : 8), *mask = strchr(list, ' ');

			if (kc_nsets == 2 * nr_cpu_ids)
				kc_fail("too many masks");
			m = malloc(sizeof(*m));
			if (!m)
				kc_fail("out of memory");
			if (mask) {
				*mask++ = '\0';
				kc_parse_cpulist(list, &who);
				kc_parse_cpulist(mask, m);
				cpus = &who;
			} else {
				kc_parse_cpulist(list, m);
				cpus = m;
			}
			/*
			 * A cluster mask equal to its first CPU's sibling mask (a cluster of one
			 * core, common in large machines) shares that mask's memory: the code
			 * reads both, never writes them.
			 */
			cpu = cpumask_first(cpus);
			first = cpu < nr_cpu_ids ? irqscope_kc_sibling[cpu] : &kc_empty;
			if (!smt && first != &kc_empty && cpumask_equal(first, m)) {
				if (cpus == m)
					cpus = first;
				free(m);
				m = first;
			} else {
				kc_sets[kc_nsets++] = m;
			}
			for_each_cpu(cpu, cpus) {
				if (smt)
					irqscope_kc_sibling[cpu] = m;
				else
					irqscope_kc_cluster[cpu] = m;
			}
		} else {
			kc_fail("unknown topology line");
		}
	}
	printf("ok\n");
	fflush(stdout);
}

#ifdef KC_COUNTER
#define KC_COUNTER_SET(v) atomic_set(&(KC_COUNTER), (int)(v))
#define KC_COUNTER_GET() ((unsigned int)atomic_read(&(KC_COUNTER)))
#else
static unsigned int kc_no_counter;
#define KC_COUNTER_SET(v) (kc_no_counter = (v))
#define KC_COUNTER_GET() (kc_no_counter)
#endif

/* One group_cpus_evenly() call with the counter set; *nummasks as the later API gives it. */
static struct cpumask *kc_group_cpus(unsigned int numgrps, unsigned int counter, unsigned int *nummasks)
{
	struct cpumask *masks;
	unsigned int i;

	kc_nwarn = kc_nwarn_dropped = 0;
	*nummasks = 0;
	KC_COUNTER_SET(counter);
	/* The build says which of the two forms the file defines (KC_GCE_NUMGRPS_ONLY). */
#ifdef KC_GCE_NUMGRPS_ONLY
	masks = group_cpus_evenly(numgrps);
	if (masks) {
		/*
		 * Before the nummasks out-parameter: the initialized masks are the leading
		 * non-empty ones (both stages fill groups from a running index and every
		 * group they count gets a CPU), so their count is the last non-empty index + 1.
		 */
		for (i = 0; i < numgrps; i++)
			if (!cpumask_empty(&masks[i]))
				*nummasks = i + 1;
	}
#else
	(void)i;
	masks = group_cpus_evenly(numgrps, nummasks);
#endif
	return masks;
}

static void kc_call(unsigned int numgrps, unsigned int counter)
{
	unsigned int nummasks, i;
	struct cpumask *masks = kc_group_cpus(numgrps, counter, &nummasks);

	if (!masks) {
		printf("null %u %u\n", KC_COUNTER_GET(), kc_nwarn);
	} else {
		printf("masks %u %u %u %u\n", nummasks, KC_COUNTER_GET(), kc_nwarn, numgrps);
		for (i = 0; i < numgrps; i++)
			kc_print_cpulist(&masks[i]);
		kfree(masks);
	}
	for (i = 0; i < kc_nwarn; i++)
		printf("warn %d %s\n", kc_warn[i].line, kc_warn[i].cond);
	fflush(stdout);
}

static int kc_cmp_ns(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

/* Time ITERS calls of one shape, each alone; print the median, least and most. */
static void kc_time(unsigned int numgrps, unsigned int counter, unsigned long iters)
{
	long long *ns = malloc(iters * sizeof(*ns));
	unsigned long i;

	if (!ns)
		kc_fail("out of memory");
	for (i = 0; i < KC_TIME_WARMUP + iters; i++) {
		struct timespec a, b;
		unsigned int nummasks;
		struct cpumask *masks;

		clock_gettime(CLOCK_MONOTONIC, &a);
		masks = kc_group_cpus(numgrps, counter, &nummasks);
		kfree(masks);
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (i >= KC_TIME_WARMUP)
			ns[i - KC_TIME_WARMUP] = (b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec);
	}
	qsort(ns, iters, sizeof(*ns), kc_cmp_ns);
	printf("time %lu %lld %lld %lld\n", iters, ns[iters / 2], ns[0], ns[iters - 1]);
	fflush(stdout);
	free(ns);
}

int main(int argc, char **argv)
{
	size_t cap = 1 << 20;
	char *line = malloc(cap);

	/*
	 * The masks are NR_CPUS bits (1 KiB) each, so a call's kcalloc()s are often past glibc's
	 * mmap threshold: every call would map fresh zeroed pages and unmap them at kfree(),
	 * page faults the kernel's slab never takes. Keep freed memory in the heap instead
	 * (calloc still clears what it hands out).
	 */
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	/* A machine or an answer in a few large pipe transfers rather than many of 4 KiB. */
	setvbuf(stdin, NULL, _IOFBF, 1 << 16);
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	kc_set_limits(argc, argv);
	if (!line)
		return 2;
	while (fgets(line, (int)cap, stdin)) {
		unsigned long numgrps, counter, iters;

		if (!strchr(line, '\n'))
			kc_fail("line too long");
		if (!strncmp(line, "topo ", 5)) {
			kc_read_topology(line, cap, stdin);
		} else if (sscanf(line, "call %lu %lu", &numgrps, &counter) == 2) {
			if (numgrps > KC_NUMGRPS_MAX || counter > UINT_MAX)
				kc_fail("call out of range");
			kc_call((unsigned int)numgrps, (unsigned int)counter);
		} else if (sscanf(line, "time %lu %lu %lu", &numgrps, &counter, &iters) == 3) {
			if (numgrps > KC_NUMGRPS_MAX || counter > UINT_MAX || !iters ||
			    iters > KC_TIME_ITERS_MAX)
				kc_fail("time out of range");
			kc_time((unsigned int)numgrps, (unsigned int)counter, iters);
		} else if (!strncmp(line, "quit", 4)) {
			break;
		} else {
			kc_fail("unknown line");
		}
	}
	return 0;
}
