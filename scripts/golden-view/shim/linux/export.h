/* SPDX-License-Identifier: GPL-2.0-only */
/* user-space stand-in for irqscope golden vectors: see kernel-c/include/irqscope_kc.h */
#include <irqscope_kc.h>
