#ifndef FLEETBENCH_CJANSSON_SHIM_H
#define FLEETBENCH_CJANSSON_SHIM_H
#include <jansson.h>

// jansson's json_typeof / json_is_* / json_decref are macros or inline functions Swift does not import
// reliably; these wrappers give Swift plain functions to call.
static inline json_type fb_json_typeof(const json_t *value) { return json_typeof(value); }
static inline void fb_json_decref(json_t *value) { json_decref(value); }
static inline json_t *fb_json_incref(json_t *value) { return json_incref(value); }
static inline int fb_json_is_true(const json_t *value) { return json_is_true(value); }
#endif
