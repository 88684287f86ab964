// libpq, PostgreSQL's client library (the one psql, pg_dump and most drivers use): the PostgreSQL enrollment
// store connects through it, so the connection string, the PG* environment variables, ~/.pgpass,
// pg_service.conf, Unix-socket hosts and every sslmode work as they do for psql.
// libpq's API has no variadic functions or macros Swift cannot call: the header is included as it is.
#ifndef KKPUSH_CLIBPQ_SHIM_H
#define KKPUSH_CLIBPQ_SHIM_H

#include <libpq-fe.h>

#endif
