// A module that must never be loaded, for the tests alone: dropped beside imagepipe's two modules in a
// VIPSHOME of the tests' own, it says so on standard error if anything loads it.
#include <unistd.h>

#include <gmodule.h>

G_MODULE_EXPORT const gchar *g_module_check_init(GModule *module) {
    (void) module;
    static const char line[] = "hostile extra: a module imagepipe does not use was loaded\n";
    ssize_t ignored = write(2, line, sizeof line - 1);
    (void) ignored;
    return NULL;
}
