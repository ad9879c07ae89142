// SPDX-License-Identifier: GPL-2.0-only
/*
 * sort.c - irqscope's own heapsort in the three generations of the kernel's lib/sort.c, for a
 * group_cpus.c built without its tree (a single file). The same sequence of compares and
 * swaps as irqscope's model (src/kernel/sort.rs), which the golden vectors check:
 *
 *   KC_SORT_GEN 51   heap-v5.1  (v5.1 .. v6.8): one extraction per round, ties go left
 *   KC_SORT_GEN 69   heap-v6.9  (v6.9 .. v6.10): ties go right, two extractions per round
 *   KC_SORT_GEN 611  heap-v6.11 (v6.11 on): as v6.9, the last two or three finished after
 *                                           the loop
 *
 * Written in index form; the kernel walks byte offsets. Only the sign of cmp is used.
 */
#include <irqscope_kc.h>

#ifndef KC_SORT_GEN
#define KC_SORT_GEN 611
#endif

struct kc_sort {
	char *base;
	size_t size;
	cmp_r_func_t cmp;
	swap_r_func_t swap;
	cmp_func_t cmp1;
	swap_func_t swap1;
	const void *priv;
};

static int kc_cmp(const struct kc_sort *s, size_t i, size_t j)
{
	const void *a = s->base + i * s->size, *b = s->base + j * s->size;

	return s->cmp1 ? s->cmp1(a, b) : s->cmp(a, b, s->priv);
}

static void kc_swap(const struct kc_sort *s, size_t i, size_t j)
{
	char *a = s->base + i * s->size, *b = s->base + j * s->size;
	size_t k;

	if (s->swap1) {
		s->swap1(a, b, (int)s->size);
		return;
	}
	if (s->swap) {
		s->swap(a, b, (int)s->size, s->priv);
		return;
	}
	for (k = 0; k < s->size; k++) {
		char t = a[k];

		a[k] = b[k];
		b[k] = t;
	}
}

/* Walk to a leaf along the larger children, back up to where element a belongs, rotate. */
static void kc_sift_down(const struct kc_sort *s, size_t a, size_t n, bool ties_right)
{
	size_t b = a, c, d;

	for (;;) {
		c = 2 * b + 1;
		d = c + 1;
		if (d >= n)
			break;
		b = (ties_right ? kc_cmp(s, c, d) > 0 : kc_cmp(s, c, d) >= 0) ? c : d;
	}
	if (d == n)
		b = c;
	while (b != a && kc_cmp(s, a, b) >= 0)
		b = (b - 1) / 2;
	c = b;
	while (b != a) {
		b = (b - 1) / 2;
		kc_swap(s, b, c);
	}
}

static void kc_heapsort(struct kc_sort *s, size_t num)
{
	size_t a = num / 2, n = num;
	unsigned int shift = 0;

	if (num < 2 || !s->size)
		return;
#if KC_SORT_GEN == 51
	for (;;) {
		if (a > 0) {
			a--;
		} else {
			if (--n == 0)
				return;
			kc_swap(s, 0, n);
		}
		kc_sift_down(s, a, n, false);
	}
#else
	for (;;) {
		if (a > 0) {
			a -= (size_t)1 << shift;
		} else if (n > 3) {
			n--;
			kc_swap(s, 0, n);
			shift = kc_cmp(s, 1, 2) <= 0;
			a = (size_t)1 << shift;
			n--;
			kc_swap(s, a, n);
		} else if (KC_SORT_GEN == 69 && n > 1) {
			n--;
			kc_swap(s, 0, n);
		} else {
			break;
		}
		kc_sift_down(s, a, n, true);
	}
#if KC_SORT_GEN == 611
	n--;
	kc_swap(s, 0, n);
	if (n == 2 && kc_cmp(s, 0, 1) > 0)
		kc_swap(s, 0, 1);
#endif
#endif
}

void sort_r(void *base, size_t num, size_t size, cmp_r_func_t cmp_func,
	    swap_r_func_t swap_func, const void *priv)
{
	struct kc_sort s = { base, size, cmp_func, swap_func, NULL, NULL, priv };

	kc_heapsort(&s, num);
}

void sort(void *base, size_t num, size_t size, cmp_func_t cmp_func, swap_func_t swap_func)
{
	struct kc_sort s = { base, size, NULL, NULL, cmp_func, swap_func, NULL };

	kc_heapsort(&s, num);
}

void sort_r_nonatomic(void *base, size_t num, size_t size, cmp_r_func_t cmp_func,
		      swap_r_func_t swap_func, const void *priv)
{
	sort_r(base, num, size, cmp_func, swap_func, priv);
}

void sort_nonatomic(void *base, size_t num, size_t size, cmp_func_t cmp_func,
		    swap_func_t swap_func)
{
	sort(base, num, size, cmp_func, swap_func);
}
