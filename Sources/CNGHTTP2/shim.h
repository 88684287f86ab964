#ifndef KKPUSH_CNGHTTP2_SHIM_H
#define KKPUSH_CNGHTTP2_SHIM_H
#include <nghttp2/nghttp2.h>
#endif
