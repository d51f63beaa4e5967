// The helper processes' C side: the sandbox a helper puts itself in (sandbox.h), the privilege it
// gives up first (privilege.h), and the channel and process calls the parent and the helper talk and
// start each other with (channel.h).
#pragma once
#include "sandbox.h"
#include "privilege.h"
#include "channel.h"
