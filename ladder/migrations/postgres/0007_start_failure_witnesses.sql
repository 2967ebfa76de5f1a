-- Which workers reported the failed starts of each bot's current run (games in a
-- row in which it could not start or shake hands), and how many each. A run
-- suspends a bot only when at least two workers saw it (one, where the ladder has
-- a single worker), so one worker cannot suspend a bot by forging spawn faults;
-- voiding a worker takes its part of every run back out. worker_id 0 is a report
-- made without a worker (the server's own tests).
CREATE TABLE start_failure_witnesses (
    bot_id BIGINT NOT NULL REFERENCES bots(id),
    worker_id BIGINT NOT NULL,
    failures BIGINT NOT NULL,
    PRIMARY KEY (bot_id, worker_id)
);
