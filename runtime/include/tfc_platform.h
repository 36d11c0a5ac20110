/* Platform hooks of the tfc runtime: what an embedder may replace (define before including). */
#ifndef TFC_PLATFORM_H
#define TFC_PLATFORM_H

#ifndef TFC_SNPRINTF
#include <stdio.h>
#define TFC_SNPRINTF snprintf
#endif

#endif /* TFC_PLATFORM_H */
