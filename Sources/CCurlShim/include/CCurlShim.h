// Typed, non-variadic wrappers over curl_easy_setopt and curl_easy_getinfo for Swift.
#ifndef CCURLSHIM_H
#define CCURLSHIM_H
#include <curl/curl.h>

/// Sets a long-valued option.
CURLcode ipc_setopt_long(CURL *handle, CURLoption option, long value);

#endif
