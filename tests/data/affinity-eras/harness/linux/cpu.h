/* SPDX-License-Identifier: GPL-2.0-only */
/* Stand-in: see ../kshim.h. */
#include "../kshim.h"
