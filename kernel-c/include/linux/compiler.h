/* SPDX-License-Identifier: GPL-2.0-only */
/* irqscope stand-in: everything is in irqscope_kc.h */
#include <irqscope_kc.h>
