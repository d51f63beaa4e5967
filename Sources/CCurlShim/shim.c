// Typed wrappers over libcurl's variadic option and info calls.
#include "CCurlShim.h"

CURLcode ipc_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
