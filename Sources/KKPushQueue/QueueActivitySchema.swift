// Schema step 4: Live Activity rows (<doc:PushQueue#Live-Activity-rows>). A row with an `activity_key` is a start,
// update or end of one Live Activity; the worker resolves it through the activity registry (its token, the
// idempotent start, the start budget) instead of sending the row's `device_token` (QueueLiveActivity.swift).

/// The columns, the constraint, the index and the trigger of Live Activity rows.
package enum QueueActivitySchema {
    /// Step 4. New nullable columns, so the backend's INSERT and older workers are unchanged.
    ///
    /// `device_token` stays NOT NULL for every reader of the table: an update or end row does not know its token
    /// (the activity's update token is the registry's, and it may not have come back yet), so its INSERT may leave
    /// `device_token` NULL, and a BEFORE INSERT trigger of its own (not a replacement of step 2's and 3's, which
    /// others extend) makes it `''` for a row with an `activity_key`; the worker writes the token it sends to into
    /// the row before sending. A row without an `activity_key` still needs its token (NOT NULL refuses it). The
    /// trigger also sets the row's `push_type` to `liveactivity`, whatever the INSERT said (a column left out is
    /// `alert` by its default before any trigger runs): the worker sends the registry's Live Activity push.
    package static let migration = PushQueueSchema.Migration(
        version: 4,
        description: "Live Activity rows: activity_key, activity_event, their index and defaults trigger",
        statements: [
            """
            ALTER TABLE \(PushQueueSchema.table) ADD COLUMN IF NOT EXISTS activity_key text,
                ADD COLUMN IF NOT EXISTS activity_event text CHECK (activity_event IN ('start', 'update', 'end'))
            """,
            // A Live Activity row names its key and its event together. Dropped first: PostgreSQL has no ADD CONSTRAINT
            // IF NOT EXISTS, and every statement of a step runs again without harm on a table that has it.
            "ALTER TABLE \(PushQueueSchema.table) DROP CONSTRAINT IF EXISTS kkpush_push_queue_activity_pair",
            """
            ALTER TABLE \(PushQueueSchema.table) ADD CONSTRAINT kkpush_push_queue_activity_pair
                CHECK ((activity_key IS NULL) = (activity_event IS NULL))
            """,
            """
            CREATE INDEX IF NOT EXISTS kkpush_push_queue_activity_key ON \(PushQueueSchema.table) (activity_key)
                WHERE activity_key IS NOT NULL
            """,
            defaultsFunctionSQL,
            "DROP TRIGGER IF EXISTS kkpush_push_queue_activity_defaults ON \(PushQueueSchema.table)",
            """
            CREATE TRIGGER kkpush_push_queue_activity_defaults BEFORE INSERT ON \(PushQueueSchema.table)
                FOR EACH ROW EXECUTE FUNCTION public.kkpush_push_queue_activity_defaults()
            """,
        ])

    /// Step 4's trigger function: a Live Activity row's NULL `device_token` becomes `''` (resolved by the worker),
    /// its `push_type` `liveactivity`.
    package static let defaultsFunctionSQL = """
        CREATE OR REPLACE FUNCTION public.kkpush_push_queue_activity_defaults() RETURNS trigger
            LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.activity_key IS NOT NULL THEN
                NEW.device_token := coalesce(NEW.device_token, '');
                NEW.push_type := 'liveactivity';
            END IF;
            RETURN NEW;
        END
        $$
        """

    /// The statement a backend runs to enqueue a Live Activity push ($1 activity key, $2 event: start, update or
    /// end, $3 topic (the bundle id), $4 payload JSON, $5 environment, $6 the enrollment's id (the device the
    /// registry knows), $7 a push-to-start token for a start, or NULL: the device's current one).
    package static let enqueueSQL = """
        INSERT INTO public.kkpush_push_queue
            (activity_key, activity_event, topic, payload, environment, enrollment_id, device_token)
        VALUES ($1, $2, $3, $4, $5, $6, $7)
        """
}
