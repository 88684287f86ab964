/*
 * curlh2load: the C libcurl side of .ci/bench-senders. It sends the same push N times over one HTTP/2 connection
 * with libcurl's multi interface, as a plain C program drives it: M easy handles (default 100) in flight,
 * multiplexed (CURLPIPE_MULTIPLEX, CURLOPT_PIPEWAIT, at most one connection to the host), each handle added
 * again as soon as its answer is in, the loop driven by curl_multi_perform and curl_multi_poll. No socket
 * options of its own: this is the baseline a libcurl client gets without tuning.
 *
 *   cc -O2 -o curlh2load curlh2load.c $(pkg-config --cflags --libs libcurl)
 *   KKPUSH_CURL_LOAD_AUTHORIZATION=<jwt> ./curlh2load URL CA-FILE PAYLOAD-FILE TOPIC N [IN-FLIGHT]
 *
 * The bearer token comes from the environment, never argv. It prints one JSON object (requests, ok, failed,
 * the first failure, seconds, rate, connections) and exits 0 when every push got a 200, 1 otherwise, 64 on
 * usage errors. Bounded: at most N transfers, and the run stops after 600 seconds.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static size_t discard(char *data, size_t size, size_t count, void *user) {
  (void)data;
  (void)user;
  return size * count;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int usage(const char *why) {
  fprintf(stderr, "curlh2load: %s\nusage: KKPUSH_CURL_LOAD_AUTHORIZATION=<jwt> curlh2load URL CA-FILE "
                  "PAYLOAD-FILE TOPIC N [IN-FLIGHT 1..1000]\n", why);
  return 64;
}

int main(int argc, char **argv) {
  if (argc < 6 || argc > 7) return usage("wrong number of arguments");
  const char *url = argv[1], *ca = argv[2], *payloadPath = argv[3], *topic = argv[4];
  char *end = NULL;
  long total = strtol(argv[5], &end, 10);
  if (*end || total < 1 || total > 100000000) return usage("N must be a whole number from 1 to 100000000");
  long inFlight = 100;
  if (argc == 7) {
    inFlight = strtol(argv[6], &end, 10);
    if (*end || inFlight < 1 || inFlight > 1000) return usage("IN-FLIGHT must be a whole number from 1 to 1000");
  }
  if (inFlight > total) inFlight = total;
  const char *jwt = getenv("KKPUSH_CURL_LOAD_AUTHORIZATION");
  if (!jwt || !*jwt) return usage("KKPUSH_CURL_LOAD_AUTHORIZATION is not set");

  FILE *f = fopen(payloadPath, "rb");
  if (!f) return usage("cannot open the payload file");
  static char payload[65536];
  size_t payloadSize = fread(payload, 1, sizeof payload, f);
  fclose(f);

  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) return usage("curl_global_init failed");
  struct curl_slist *headers = NULL;
  char line[8192];
  snprintf(line, sizeof line, "authorization: bearer %s", jwt);
  headers = curl_slist_append(headers, line);
  snprintf(line, sizeof line, "apns-topic: %s", topic);
  headers = curl_slist_append(headers, line);
  headers = curl_slist_append(headers, "apns-push-type: alert");
  headers = curl_slist_append(headers, "apns-priority: 10");
  headers = curl_slist_append(headers, "content-type: application/json");
  headers = curl_slist_append(headers, "Expect:");
  headers = curl_slist_append(headers, "Accept:");

  CURLM *multi = curl_multi_init();
  curl_multi_setopt(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
  curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, 1L);
  curl_multi_setopt(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, inFlight);

  CURL **easies = calloc((size_t)inFlight, sizeof *easies);
  long started = 0, ok = 0, failed = 0, connections = 0;
  char first[CURL_ERROR_SIZE + 64] = "";
  for (long i = 0; i < inFlight; i++) {
    CURL *e = curl_easy_init();
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_CAINFO, ca);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, payload);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)payloadSize);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, 60L);
    easies[i] = e;
    curl_multi_add_handle(multi, e);
    started++;
  }

  double start = now(), limit = start + 600;
  int running = 1;
  while (running || started < total) {
    if (curl_multi_perform(multi, &running) != CURLM_OK) break;
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(multi, &left))) {
      if (msg->msg != CURLMSG_DONE) continue;
      CURL *e = msg->easy_handle;
      long status = 0, newConnections = 0;
      curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
      curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &newConnections);
      connections += newConnections;
      if (msg->data.result == CURLE_OK && status == 200) {
        ok++;
      } else {
        if (!failed)
          snprintf(first, sizeof first, "%s, status %ld", curl_easy_strerror(msg->data.result), status);
        failed++;
      }
      curl_multi_remove_handle(multi, e);
      if (started < total && now() < limit) {
        curl_multi_add_handle(multi, e);
        started++;
        running = 1;
      }
    }
    if (now() >= limit && !running) break;
    if (running && curl_multi_poll(multi, NULL, 0, 1000, NULL) != CURLM_OK) break;
  }
  double seconds = now() - start;
  if (ok + failed < total && !failed) snprintf(first, sizeof first, "stopped after %.0f s", seconds);

  for (long i = 0; i < inFlight; i++) curl_easy_cleanup(easies[i]);
  free(easies);
  curl_multi_cleanup(multi);
  curl_slist_free_all(headers);
  curl_global_cleanup();

  printf("{\"requests\": %ld, \"ok\": %ld, \"failed\": %ld, \"first_failure\": \"%s\", \"seconds\": %.6f, "
         "\"rate\": %.1f, \"connections\": %ld}\n",
         total, ok, failed, first, seconds, (double)total / seconds, connections);
  return ok == total ? 0 : 1;
}
