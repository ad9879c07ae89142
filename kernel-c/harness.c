// SPDX-License-Identifier: GPL-2.0-only
/*
 * harness.c - runs one build of a tree's placement code for irqscope, as a separate process:
 * lib/group_cpus.c always, and where the build has them kernel/irq/affinity.c (KC_AFFINITY)
 * and block/blk-mq-cpumap.c (KC_BLK_MQ; KC_BLK_MQ_HW when it defines blk_mq_map_hw_queues()).
 *
 * lib/group_cpus.c is compiled into this translation unit (#include KC_SOURCE) so that its
 * file-static rotation counter, when it has one (KC_COUNTER names it), can be set before and
 * read after every call: the counter is an input and an output, like `--counter`. The other
 * two files are compiled apart with group_cpus_evenly renamed to kc_traced_group_cpus_evenly
 * below, which records the counter each of their calls consumed.
 *
 * Line protocol on stdin/stdout (one process answers many calls; irqscope's runner is the
 * only client):
 *
 *   in:  topo NR_CPU_IDS NR_NODE_IDS        a new machine (the lines below up to "end")
 *        node N0 N1 ...                     cpu_to_node() of every CPU id (-1: not possible)
 *        present CPULIST
 *        online CPULIST                     cpu_online_mask (default: the present CPUs)
 *        smt CPUS MASK                      topology_sibling_cpumask() of each CPU in
 *                                           CPUS is MASK (both cpulists; repeated);
 *                                           "smt MASK": CPUS is MASK
 *        cluster CPUS MASK                  topology_cluster_cpumask() likewise (a CPU
 *                                           named in no line has an empty mask)
 *        end
 *        boot IRQAFFINITY MANAGED_IRQ       the boot parameters until the next boot line:
 *                                           irqaffinity= (a cpulist; the boot CPU 0 is added
 *                                           as irq_affinity_setup() does; "-": not given, every
 *                                           CPU) and the HK_TYPE_MANAGED_IRQ housekeeping CPUs
 *                                           of isolcpus=managed_irq ("-": not set)
 *        call NUMGRPS COUNTER               group_cpus_evenly(NUMGRPS) with the counter set
 *        affinity COUNTER NVECS PRE POST SETS  irq_create_affinity_masks(NVECS, affd): SETS is
 *                                           "-" (no calc_sets(): default_calc_sets()) or the
 *                                           driver's set sizes, comma-separated
 *        calcvec MINVEC MAXVEC PRE POST SETS  irq_calc_affinity_vectors()
 *        mapq COUNTER NR_QUEUES QUEUE_OFFSET  blk_mq_map_queues() of a zeroed map
 *        maphw COUNTER NR_QUEUES QUEUE_OFFSET OFFSET NVEC  blk_mq_map_hw_queues(qmap, dev,
 *                                           OFFSET), the device's irq_get_affinity() giving
 *                                           the NVEC masks of the "m CPULIST" lines after
 *                                           (NULL past them; NVEC -1: no affinity at all)
 *        time NUMGRPS COUNTER ITERS         the same call 5 times untimed, then ITERS times,
 *                                           each timed alone (the call and the caller's
 *                                           kfree(), CLOCK_MONOTONIC), the counter set before
 *                                           each
 *   out: ok                                 after "end"
 *        null COUNTER_AFTER NWARN           the call returned NULL
 *        masks NUMMASKS COUNTER_AFTER NWARN NUMGRPS, then NUMGRPS lines "m CPULIST"
 *        affnull COUNTER_AFTER NWARN        irq_create_affinity_masks() returned NULL
 *        aff NVECS COUNTER_AFTER NWARN OFFSETS, then NVECS lines "d MANAGED CPULIST";
 *                                           OFFSETS: the counter values the calls consumed,
 *                                           comma-separated ("-": none)
 *        calc N                             irq_calc_affinity_vectors()'s answer
 *        map COUNTER_AFTER NWARN OFFSETS, then one line "q Q0 Q1 ..." (mq_map[] of every
 *                                           CPU id, "-" for ids that are not possible)
 *        warn FILE:LINE TEXT                NWARN lines (after any answer)
 *        time ITERS MEDIAN_NS MIN_NS MAX_NS  after "time": nanoseconds per call
 *        error TEXT                         a line irqscope could not read
 *
 * Limits: the runner passes the address-space limit (MiB) and the CPU-time limit (s) as
 * arguments; they are set before the first call, so a call that loops or allocates without
 * end is ended by the kernel of the machine running irqscope, not by irqscope's server.
 *
 * Confinement: the code under test is a stranger's until read, and this process only reads
 * its stdin, writes its stdout and uses memory. Before it reads anything it installs a
 * seccomp filter (kc_confine) that allows only those system calls; any other one (open,
 * fork, socket, execve, kill, ...) ends the process with SIGSYS. irqscope also starts it in
 * a sandbox of its own (src/kernel_c/exec.rs).
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <irqscope_kc.h>

#include KC_SOURCE

unsigned int nr_cpu_ids = 1;
unsigned int nr_node_ids = 1;
struct cpumask irqscope_kc_possible, irqscope_kc_present, irqscope_kc_online;
static struct cpumask kc_default_affinity, kc_managed_irq;
cpumask_var_t irq_default_affinity = &kc_default_affinity;
const struct cpumask *irqscope_kc_managed_irq;
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

/* The last path component of a file name, as the C's WARN sites are named. */
static const char *kc_base(const char *file)
{
	const char *slash = strrchr(file, '/');

	return slash ? slash + 1 : file;
}

static void kc_print_warnings(void)
{
	unsigned int i;

	for (i = 0; i < kc_nwarn; i++)
		printf("warn %s:%d %s\n", kc_base(kc_warn[i].file), kc_warn[i].line, kc_warn[i].cond);
}

/* A cpulist of m after PREFIX, then a newline. */
static void kc_print_mask(const char *prefix, const struct cpumask *m)
{
	unsigned int cpu = find_first_bit(m->bits, nr_cpu_ids);
	bool first = true;

	fputs(prefix, stdout);
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

/*
 * The seccomp filter. The classic-BPF program and the constants are written out here (the
 * values of <linux/filter.h>, <linux/seccomp.h>, <linux/audit.h> and <linux/prctl.h>, which
 * cannot be included beside the stand-in <linux/...> headers of the build).
 */
struct kc_sock_filter {
	unsigned short code;
	unsigned char jt, jf;
	unsigned int k;
};

struct kc_sock_fprog {
	unsigned short len;
	struct kc_sock_filter *filter;
};

#define KC_BPF_LD_W_ABS 0x20		/* BPF_LD | BPF_W | BPF_ABS */
#define KC_BPF_JEQ_K 0x15		/* BPF_JMP | BPF_JEQ | BPF_K */
#define KC_BPF_JGE_K 0x35		/* BPF_JMP | BPF_JGE | BPF_K */
#define KC_BPF_RET_K 0x06		/* BPF_RET | BPF_K */
#define KC_SECCOMP_RET_KILL_PROCESS 0x80000000U
#define KC_SECCOMP_RET_ALLOW 0x7fff0000U
#define KC_SECCOMP_MODE_FILTER 2
#define KC_PR_SET_SECCOMP 22
#define KC_PR_SET_NO_NEW_PRIVS 38
/* struct seccomp_data: int nr; __u32 arch; ... */
#define KC_DATA_NR 0
#define KC_DATA_ARCH 4

#if defined(__x86_64__)
#define KC_AUDIT_ARCH 0xc000003eU	/* AUDIT_ARCH_X86_64 */
#elif defined(__aarch64__)
#define KC_AUDIT_ARCH 0xc00000b7U	/* AUDIT_ARCH_AARCH64 */
#else
#error "the harness's seccomp filter knows x86_64 and aarch64 only"
#endif

#define KC_ALLOW(nr) { KC_BPF_JEQ_K, 0, 1, (nr) }, { KC_BPF_RET_K, 0, 0, KC_SECCOMP_RET_ALLOW }

/*
 * Allow only what answering the protocol takes, every other call ends the process. Any
 * failure to install it ends the process too: it must not run unconfined.
 */
static void kc_confine(void)
{
	struct kc_sock_filter prog[] = {
		/* Another architecture's calling convention (a 32-bit entry) has other numbers. */
		{ KC_BPF_LD_W_ABS, 0, 0, KC_DATA_ARCH },
		{ KC_BPF_JEQ_K, 1, 0, KC_AUDIT_ARCH },
		{ KC_BPF_RET_K, 0, 0, KC_SECCOMP_RET_KILL_PROCESS },
		{ KC_BPF_LD_W_ABS, 0, 0, KC_DATA_NR },
#ifdef __x86_64__
		/* The x32 ABI's numbers (bit 30 set) under the same architecture. */
		{ KC_BPF_JGE_K, 0, 1, 0x40000000U },
		{ KC_BPF_RET_K, 0, 0, KC_SECCOMP_RET_KILL_PROCESS },
#endif
		/* The protocol: requests from stdin, answers to stdout. */
		KC_ALLOW(SYS_read),
		KC_ALLOW(SYS_write),
		/* Memory: malloc's heap and its large blocks (calloc, free, realloc). */
		KC_ALLOW(SYS_brk),
		KC_ALLOW(SYS_mmap),
		KC_ALLOW(SYS_munmap),
		KC_ALLOW(SYS_mremap),
		/* The end: exit() after flushing stdout, and a return from a signal handler. */
		KC_ALLOW(SYS_exit),
		KC_ALLOW(SYS_exit_group),
		KC_ALLOW(SYS_rt_sigreturn),
		{ KC_BPF_RET_K, 0, 0, KC_SECCOMP_RET_KILL_PROCESS },
	};
	struct kc_sock_fprog fprog = { (unsigned short)(sizeof(prog) / sizeof(prog[0])), prog };

	if (syscall(SYS_prctl, KC_PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL) ||
	    syscall(SYS_prctl, KC_PR_SET_SECCOMP, (unsigned long)KC_SECCOMP_MODE_FILTER, &fprog, 0UL, 0UL))
		_exit(4);
}

static void kc_read_topology(char *line, size_t cap, FILE *in)
{
	unsigned long ncpu, nnode;
	unsigned int cpu;
	bool online_given;

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
	memset(&irqscope_kc_online, 0, sizeof(irqscope_kc_online));
	memset(&irqscope_kc_node_possible, 0, sizeof(irqscope_kc_node_possible));
	for (cpu = 0; cpu < nnode; cpu++)
		set_bit(cpu, irqscope_kc_node_possible.bits);
	for (cpu = 0; cpu < NR_CPUS; cpu++) {
		irqscope_kc_cpu_to_node[cpu] = 0;
		irqscope_kc_sibling[cpu] = &kc_empty;
		irqscope_kc_cluster[cpu] = &kc_empty;
	}
	(void)cap;
	online_given = false;
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
		} else if (!strncmp(line, "online ", 7)) {
			kc_parse_cpulist(line + 7, &irqscope_kc_online);
			online_given = true;
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
	if (!online_given)
		cpumask_copy(&irqscope_kc_online, &irqscope_kc_present);
	printf("ok\n");
	fflush(stdout);
}

/* "boot IRQAFFINITY MANAGED_IRQ": irq_default_affinity as irq_affinity_setup() and
 * init_irq_default_affinity() leave it, and the managed_irq housekeeping CPUs. */
static void kc_read_boot(char *args)
{
	char *hk = strchr(args, ' ');

	if (!hk)
		kc_fail("bad boot line");
	*hk++ = '\0';
	memset(&kc_default_affinity, 0, sizeof(kc_default_affinity));
	if (strcmp(args, "-")) {
		kc_parse_cpulist(args, &kc_default_affinity);
		/* "Set at least the boot cpu." */
		cpumask_set_cpu(0, &kc_default_affinity);
	}
	if (cpumask_empty(&kc_default_affinity))
		cpumask_setall(&kc_default_affinity);
	if (strncmp(hk, "-", 1)) {
		kc_parse_cpulist(hk, &kc_managed_irq);
		irqscope_kc_managed_irq = &kc_managed_irq;
	} else {
		irqscope_kc_managed_irq = NULL;
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
			kc_print_mask("m ", &masks[i]);
		kfree(masks);
	}
	kc_print_warnings();
	fflush(stdout);
}

/* ---- the stages built from the rest of the tree ---- */

#define KC_CALLS_MAX 64
#define KC_NVECS_MAX 65536
/* The counter values the group_cpus_evenly() calls of one stage consumed, in call order. */
static unsigned int kc_offsets[KC_CALLS_MAX], kc_noffsets;

#ifdef KC_GCE_NUMGRPS_ONLY
struct cpumask *kc_traced_group_cpus_evenly(unsigned int numgrps);
struct cpumask *kc_traced_group_cpus_evenly(unsigned int numgrps)
#else
struct cpumask *kc_traced_group_cpus_evenly(unsigned int numgrps, unsigned int *nummasks);
struct cpumask *kc_traced_group_cpus_evenly(unsigned int numgrps, unsigned int *nummasks)
#endif
{
	unsigned int before = KC_COUNTER_GET();
	struct cpumask *masks;

#ifdef KC_GCE_NUMGRPS_ONLY
	masks = group_cpus_evenly(numgrps);
#else
	masks = group_cpus_evenly(numgrps, nummasks);
#endif
	if (KC_COUNTER_GET() != before && kc_noffsets < KC_CALLS_MAX)
		kc_offsets[kc_noffsets++] = before;
	return masks;
}

/* Before a stage: no WARNs, no offsets, the counter set. */
static void kc_stage_start(unsigned long counter)
{
	if (counter > UINT_MAX)
		kc_fail("counter out of range");
	kc_nwarn = kc_nwarn_dropped = 0;
	kc_noffsets = 0;
	KC_COUNTER_SET((unsigned int)counter);
}

static void kc_print_offsets(void)
{
	unsigned int i;

	if (!kc_noffsets)
		fputs(" -", stdout);
	for (i = 0; i < kc_noffsets; i++)
		printf("%s%u", i ? "," : " ", kc_offsets[i]);
	putchar('\n');
}

/* The driver's set sizes, installed by kc_calc_sets() as a driver's calc_sets() would. */
static unsigned int kc_set_sizes[IRQ_AFFINITY_MAX_SETS + 4], kc_nsets_given;

static void kc_calc_sets(struct irq_affinity *affd, unsigned int affvecs)
{
	unsigned int i;

	(void)affvecs;
	affd->nr_sets = kc_nsets_given;
	for (i = 0; i < kc_nsets_given && i < IRQ_AFFINITY_MAX_SETS; i++)
		affd->set_size[i] = kc_set_sizes[i];
}

/* "PRE POST SETS" of an affinity or calcvec line into affd. */
static void kc_read_affd(const char *p, struct irq_affinity *affd)
{
	unsigned long pre, post;
	char sets[256];

	memset(affd, 0, sizeof(*affd));
	if (sscanf(p, "%lu %lu %255s", &pre, &post, sets) != 3 || pre > KC_NVECS_MAX || post > KC_NVECS_MAX)
		kc_fail("bad affinity request");
	affd->pre_vectors = pre;
	affd->post_vectors = post;
	kc_nsets_given = 0;
	if (strcmp(sets, "-")) {
		char *q = sets, *end;

		for (;;) {
			unsigned long v = strtoul(q, &end, 10);

			if (end == q || v > KC_NVECS_MAX || kc_nsets_given == ARRAY_SIZE(kc_set_sizes))
				kc_fail("bad set sizes");
			kc_set_sizes[kc_nsets_given++] = v;
			if (*end != ',')
				break;
			q = end + 1;
		}
		affd->calc_sets = kc_calc_sets;
	}
}

#ifdef KC_AFFINITY
static void kc_affinity(const char *args)
{
	unsigned long counter, nvecs;
	struct irq_affinity affd;
	struct irq_affinity_desc *descs;
	int used;
	unsigned int i;

	if (sscanf(args, "%lu %lu %n", &counter, &nvecs, &used) != 2 || nvecs > KC_NVECS_MAX)
		kc_fail("bad affinity line");
	kc_read_affd(args + used, &affd);
	kc_stage_start(counter);
	descs = irq_create_affinity_masks(nvecs, &affd);
	if (!descs) {
		printf("affnull %u %u\n", KC_COUNTER_GET(), kc_nwarn);
	} else {
		printf("aff %lu %u %u", nvecs, KC_COUNTER_GET(), kc_nwarn);
		kc_print_offsets();
		for (i = 0; i < nvecs; i++)
			kc_print_mask(descs[i].is_managed ? "d 1 " : "d 0 ", &descs[i].mask);
		kfree(descs);
	}
	kc_print_warnings();
	fflush(stdout);
}

static void kc_calcvec(const char *args)
{
	unsigned long minvec, maxvec;
	struct irq_affinity affd;
	int used;

	if (sscanf(args, "%lu %lu %n", &minvec, &maxvec, &used) != 2 || minvec > UINT_MAX || maxvec > UINT_MAX)
		kc_fail("bad calcvec line");
	kc_read_affd(args + used, &affd);
	kc_stage_start(0);
	printf("calc %u\n", irq_calc_affinity_vectors(minvec, maxvec, &affd));
	fflush(stdout);
}
#endif

#ifdef KC_BLK_MQ
/* The device blk_mq_map_hw_queues() asks: its vectors' affinity masks, NULL past them. */
static struct cpumask *kc_dev_masks;
static long kc_dev_nvec;

static const struct cpumask *kc_irq_get_affinity(struct device *dev, unsigned int vec)
{
	(void)dev;
	if (kc_dev_nvec < 0 || vec >= (unsigned long)kc_dev_nvec)
		return NULL;
	return &kc_dev_masks[vec];
}

static const struct bus_type kc_bus = { .irq_get_affinity = kc_irq_get_affinity };

/* Print the map of a mapper's answer (mq_map of every CPU id). */
static void kc_print_map(const unsigned int *mq_map)
{
	unsigned int cpu;

	printf("map %u %u", KC_COUNTER_GET(), kc_nwarn);
	kc_print_offsets();
	fputs("q", stdout);
	for (cpu = 0; cpu < nr_cpu_ids; cpu++) {
		if (cpumask_test_cpu(cpu, cpu_possible_mask))
			printf(" %u", mq_map[cpu]);
		else
			fputs(" -", stdout);
	}
	putchar('\n');
	kc_print_warnings();
	fflush(stdout);
}

/* "mapq COUNTER NR_QUEUES QUEUE_OFFSET" and "maphw COUNTER NR_QUEUES QUEUE_OFFSET OFFSET NVEC". */
static void kc_map(const char *args, bool hw, char *line, size_t cap, FILE *in)
{
	unsigned long counter, nr_queues, queue_offset, offset = 0;
	long nvec = -1, i;
	struct blk_mq_queue_map qmap;
	struct device dev = { .bus = &kc_bus };
	int n = hw ? sscanf(args, "%lu %lu %lu %lu %ld", &counter, &nr_queues, &queue_offset, &offset, &nvec)
		   : sscanf(args, "%lu %lu %lu", &counter, &nr_queues, &queue_offset);

	if (n != (hw ? 5 : 3) || nr_queues > KC_NUMGRPS_MAX || queue_offset > UINT_MAX ||
	    offset > KC_NVECS_MAX || nvec < -1 || nvec > KC_NVECS_MAX)
		kc_fail("bad map line");
	free(kc_dev_masks);
	kc_dev_masks = calloc(nvec > 0 ? nvec : 1, sizeof(*kc_dev_masks));
	if (!kc_dev_masks)
		kc_fail("out of memory");
	kc_dev_nvec = nvec;
	for (i = 0; i < nvec; i++) {
		if (!fgets(line, (int)cap, in) || strncmp(line, "m ", 2))
			kc_fail("a mask line expected");
		kc_parse_cpulist(line + 2, &kc_dev_masks[i]);
	}
	qmap.nr_queues = nr_queues;
	qmap.queue_offset = queue_offset;
	qmap.mq_map = calloc(nr_cpu_ids, sizeof(*qmap.mq_map));
	if (!qmap.mq_map)
		kc_fail("out of memory");
	kc_stage_start(counter);
#ifdef KC_BLK_MQ_HW
	if (hw)
		blk_mq_map_hw_queues(&qmap, &dev, offset);
	else
		blk_mq_map_queues(&qmap);
#else
	(void)dev;
	if (hw)
		kc_fail("this tree has no blk_mq_map_hw_queues()");
	blk_mq_map_queues(&qmap);
#endif
	kc_print_map(qmap.mq_map);
	free(qmap.mq_map);
}
#endif

/*
 * Sort n times in place (a heapsort): glibc's qsort() asks the kernel for the machine's
 * memory size (sysinfo), a system call the seccomp filter refuses.
 */
static void kc_sort_ns(long long *ns, unsigned long n)
{
	unsigned long end, i;

	for (end = n; end > 1; end--) {
		long long t;

		/* Heapify on the first pass, then sift the new root down. */
		for (i = end == n ? n / 2 : 1; i-- > 0;) {
			unsigned long at = i;

			for (;;) {
				unsigned long c = 2 * at + 1;

				if (c >= end)
					break;
				if (c + 1 < end && ns[c + 1] > ns[c])
					c++;
				if (ns[at] >= ns[c])
					break;
				t = ns[at], ns[at] = ns[c], ns[c] = t;
				at = c;
			}
		}
		t = ns[0], ns[0] = ns[end - 1], ns[end - 1] = t;
	}
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
	kc_sort_ns(ns, iters);
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
	kc_confine();
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
		} else if (!strncmp(line, "boot ", 5)) {
			kc_read_boot(line + 5);
#ifdef KC_AFFINITY
		} else if (!strncmp(line, "affinity ", 9)) {
			kc_affinity(line + 9);
		} else if (!strncmp(line, "calcvec ", 8)) {
			kc_calcvec(line + 8);
#endif
#ifdef KC_BLK_MQ
		} else if (!strncmp(line, "mapq ", 5)) {
			kc_map(line + 5, false, line, cap, stdin);
		} else if (!strncmp(line, "maphw ", 6)) {
			kc_map(line + 6, true, line, cap, stdin);
#endif
		} else if (!strncmp(line, "quit", 4)) {
			break;
		} else {
			kc_fail("unknown line");
		}
	}
	return 0;
}
