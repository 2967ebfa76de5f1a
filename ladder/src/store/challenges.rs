//! Authors' challenges: unrated games between an author's bot and another, each
//! a competition of its own (format `challenge`) with the two bots as its only
//! entrants.

use super::*;

/// A challenge as kept.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct ChallengeRow {
    /// Its competition.
    pub competition_id: CompetitionId,
    /// Who asked.
    pub author_id: AuthorId,
    /// Their bot.
    pub bot_id: BotId,
    /// The bot it meets.
    pub opponent_id: BotId,
    /// Games asked for.
    pub games: i64,
    /// When (ms since the epoch).
    pub created_ms: i64,
}

impl Challenges<'_> {
    /// Opens challenge `c` (a competition of format `challenge`) of `bot` against
    /// `opponent` for `author`, unless it would take the games `author` asked for
    /// in the last day past `per_day`. One transaction, under the author's lock
    /// (the count and the insert are one step, however many ask at once): the
    /// competition, its two entrants and the challenge row come together or not
    /// at all.
    ///
    /// # Errors
    /// [`StoreError::Conflict`] past the cap (saying how many are left) or for a
    /// taken name; the database.
    pub async fn open_challenge(
        self,
        c: &NewCompetition,
        author: AuthorId,
        bot: BotId,
        opponent: BotId,
        per_day: i64,
    ) -> Result<CompetitionRow> {
        let now = self.store.now_ms();
        let mut tx = self.store.write_tx().await?;
        // One author's challenges one at a time: 20 sent at once against a cap
        // of 200 games were all counted before any was stored (708 games granted).
        self.store.lock_author(&mut tx, author).await?;
        let asked: i64 = sqlx::query(
            "SELECT CAST(COALESCE(SUM(games), 0) AS BIGINT) FROM challenges WHERE author_id = $1 AND created_ms > $2",
        )
        .bind(author)
        .bind(now - 86_400_000)
        .fetch_one(&mut *tx)
        .await?
        .try_get(0)?;
        if asked + c.max_games > per_day {
            return Err(StoreError::Conflict(format!(
                "this ladder plays at most {per_day} challenge games a day for an author; you asked for {asked} in the last 24 hours, so {} more can be asked for now",
                (per_day - asked).max(0)
            )));
        }
        let challenge = NewCompetition {
            format: CompetitionFormat::Challenge,
            ..c.clone()
        };
        let id = self
            .store
            .competitions()
            .insert_competition_row(&mut tx, &challenge)
            .await?;
        for b in [bot, opponent] {
            sqlx::query("INSERT INTO entrants (competition_id, bot_id) VALUES ($1, $2)")
                .bind(id)
                .bind(b)
                .execute(&mut *tx)
                .await?;
        }
        sqlx::query(
            "INSERT INTO challenges (competition_id, author_id, bot_id, opponent_id, games, created_ms) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(id)
        .bind(author)
        .bind(bot)
        .bind(opponent)
        .bind(c.max_games)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        self.store
            .competitions()
            .competition(&c.name)
            .await?
            .ok_or_else(|| StoreError::Corrupt(format!("challenge {id} vanished")))
    }

    /// An author's challenges, newest first.
    ///
    /// # Errors
    /// The database.
    pub async fn challenges_of(self, author: AuthorId) -> Result<Vec<ChallengeRow>> {
        Ok(sqlx::query_as(
            "SELECT competition_id, author_id, bot_id, opponent_id, games, created_ms FROM challenges
             WHERE author_id = $1 ORDER BY competition_id DESC",
        )
        .bind(author)
        .fetch_all(&self.store.pool)
        .await?)
    }
}

#[cfg(test)]
mod tests {
    use crate::store::{LeaseAsk, NewCompetition, Store};

    /// A challenge's groups are leased ahead of the ladder's groups already
    /// waiting, as many as the lease's share says, and the ladder's after them
    /// (issue 58: a challenge waited 4 min 20 s behind about 250 ladder groups).
    #[tokio::test]
    async fn a_challenges_groups_are_leased_ahead_of_the_ladders_within_the_share() {
        let store = Store::open("sqlite::memory:").await.unwrap();
        let author = store.authors().add_author("alice", "hash", 3).await.unwrap();
        let mut ids = Vec::new();
        for name in ["a", "b"] {
            ids.push(
                store
                    .bots()
                    .register_bot(name, "ur", "builtin:random", &[])
                    .await
                    .unwrap()
                    .id,
            );
        }
        let ladder = store
            .competitions()
            .open_competition(&NewCompetition::two_seat_ur("ladder"))
            .await
            .unwrap();
        let waiting: Vec<_> = (0..250).map(|_| ids.clone()).collect();
        store.groups().schedule_many(&ladder, &waiting).await.unwrap();
        let challenge = store
            .challenges()
            .open_challenge(
                &NewCompetition::two_seat_ur("challenge"),
                author.id,
                ids[0],
                ids[1],
                1000,
            )
            .await
            .unwrap();
        store
            .groups()
            .schedule_many(&challenge, &[ids.clone(), ids.clone()])
            .await
            .unwrap();
        let lease = |n: usize, first: i64, want: i64| {
            let store = store.clone();
            async move {
                let token = format!("lease-{n}");
                let ask = LeaseAsk {
                    challenges_first: first,
                    ..LeaseAsk::new("w", &token)
                };
                let now = store.now_ms();
                store
                    .groups()
                    .lease_many(&ask, now, now + 60_000, want, 1000)
                    .await
                    .unwrap()
                    .iter()
                    .map(|g| g.competition_id)
                    .collect::<Vec<_>>()
            }
        };
        let challenges = |leased: &[crate::store::CompetitionId]| {
            (
                leased.iter().filter(|&&c| c == challenge.id).count(),
                leased.len(),
            )
        };
        // No share: the order of scheduling, so the ladder's.
        assert_eq!(challenges(&lease(0, 0, 1).await), (0, 1));
        // One of four first: one challenge group, and three of the ladder's.
        assert_eq!(challenges(&lease(1, 1, 4).await), (1, 4));
        // Two first, one left: it, and the ladder's.
        assert_eq!(challenges(&lease(2, 2, 2).await), (1, 2));
        assert_eq!(challenges(&lease(3, 3, 3).await), (0, 3));
    }
}
